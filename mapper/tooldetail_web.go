package mapper

import (
	"strings"

	"github.com/agyharness/agyharness/wire"
)

// The detail of web reads: the URL, as the call's title and url; the page's
// text as the result's output.

type webDocument struct {
	URL    string `json:"url"`
	Title  string `json:"title"`
	Text   string `json:"text"`
	Chunks []struct {
		Text string `json:"text"`
	} `json:"chunks"`
	Summary string `json:"summary"`
}

// text is the document's text: text, else its chunks' texts.
func (w *webDocument) text() string {
	if w == nil {
		return ""
	}
	if w.Text != "" {
		return w.Text
	}
	parts := make([]string, 0, len(w.Chunks))
	for _, c := range w.Chunks {
		if c.Text != "" {
			parts = append(parts, c.Text)
		}
	}
	return strings.Join(parts, "\n")
}

func urlOf(w *webDocument) string {
	if w == nil {
		return ""
	}
	return w.URL
}

type contentChunkBody struct {
	DocumentID string       `json:"documentId"`
	Position   wire.Int     `json:"position"`
	Item       *webDocument `json:"croppedItem"`
}

var viewContentChunkCall = fromBody(func(b *contentChunkBody, d *callDetail) {
	d.title = "Read chunk " + num(int(b.Position)) + " of " + firstNonEmpty(urlOf(b.Item), b.DocumentID)
	d.url = urlOf(b.Item)
})

// croppedItemBody is the part of a VIEW_CONTENT_CHUNK body its result reads.
type croppedItemBody struct {
	Item *webDocument `json:"croppedItem"`
}

var viewContentChunkResult = fromBody(func(b *croppedItemBody, d *resultDetail) {
	if b.Item != nil {
		d.say(b.Item.text())
		d.url = b.Item.URL
	}
})

type readURLBody struct {
	URL         string       `json:"url"`
	Document    *webDocument `json:"webDocument"`
	ResolvedURL string       `json:"resolvedUrl"`
	Rejected    bool         `json:"userRejected"`
}

// readURLCall reads the URL from the body, else from the arguments.
func readURLCall(v stepView, d *callDetail) {
	b, _ := decodeBody[readURLBody](v)
	if b.URL == "" {
		var args struct{ Url string }
		v.toolArgs(&args)
		b.URL = args.Url
	}
	d.url = b.URL
	d.title = "Read " + b.URL
}

var readURLResult = fromBody(func(b *readURLBody, d *resultDetail) {
	d.url = firstNonEmpty(b.ResolvedURL, b.URL, urlOf(b.Document))
	if b.Rejected {
		d.say("the user declined to read " + d.url)
		return
	}
	d.say(b.Document.text())
})

type urlBody struct {
	URL string `json:"url"`
}

var openBrowserURLCall = fromBody(func(b *urlBody, d *callDetail) { d.url, d.title = b.URL, "Open "+b.URL })

type browserPageBody struct {
	PageID   string       `json:"pageId"`
	Document *webDocument `json:"webDocument"`
	Page     *struct {
		URL   string `json:"url"`
		Title string `json:"pageTitle"`
	} `json:"pageMetadata"`
}

func (b *browserPageBody) url() string {
	if b.Page != nil && b.Page.URL != "" {
		return b.Page.URL
	}
	return urlOf(b.Document)
}

var readBrowserPageCall = fromBody(func(b *browserPageBody, d *callDetail) {
	d.url = b.url()
	d.title = "Read the page " + firstNonEmpty(d.url, b.PageID)
})

var readBrowserPageResult = fromBody(func(b *browserPageBody, d *resultDetail) {
	d.url = b.url()
	d.say(b.Document.text())
})

type workspaceAPIBody struct {
	URL        string   `json:"url"`
	Method     string   `json:"httpMethod"`
	StatusCode wire.Int `json:"statusCode"`
	Response   string   `json:"response"`
}

var workspaceAPICall = fromBody(func(b *workspaceAPIBody, d *callDetail) {
	d.url = b.URL
	d.title = strings.TrimSpace(b.Method + " " + b.URL)
})

var workspaceAPIResult = fromBody(func(b *workspaceAPIBody, d *resultDetail) {
	d.url = b.URL
	d.say(b.Response)
})
