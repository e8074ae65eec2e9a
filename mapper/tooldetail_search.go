package mapper

import (
	"strconv"
	"strings"

	"github.com/agyharness/agyharness/messages"
	"github.com/agyharness/agyharness/wire"
)

// The detail of searches: the query and where as the call's title; the hits
// (at most maxHits, hit_count telling them all) and the files they are in as
// the result's.

func hitLine(path string, line int, text string) string {
	s := path
	if line > 0 {
		s += ":" + num(line)
	}
	if text != "" {
		s += ": " + text
	}
	return s
}

// hitLocations are the distinct files of hits, first line found in each.
func hitLocations(hits []messages.Hit) []messages.Location {
	seen := map[string]bool{}
	var out []messages.Location
	for _, h := range hits {
		if h.Path == "" || seen[h.Path] || strings.Contains(h.Path, "://") {
			continue
		}
		seen[h.Path] = true
		out = append(out, messages.Location{Path: h.Path, Line: h.Line})
	}
	return out
}

type grepBody struct {
	SearchPathURI string   `json:"searchPathUri"`
	Query         string   `json:"query"`
	Includes      []string `json:"includes"`
	Results       []struct {
		RelativePath string   `json:"relativePath"`
		AbsolutePath string   `json:"absolutePath"`
		LineNumber   wire.Int `json:"lineNumber"`
		Content      string   `json:"content"`
	} `json:"results"`
	TotalResults wire.Int `json:"totalResults"`
	RawOutput    string   `json:"rawOutput"`
	GrepError    string   `json:"grepError"`
}

var grepSearchCall = fromBody(func(b *grepBody, d *callDetail) {
	path := filePath(b.SearchPathURI)
	d.title = "Search for " + strconv.Quote(b.Query) + in(path)
	if len(b.Includes) > 0 {
		d.title += " (" + strings.Join(b.Includes, ", ") + ")"
	}
	d.locations = locate(path, 0)
})

var grepSearchResult = fromBody(func(b *grepBody, d *resultDetail) {
	if b.GrepError != "" {
		d.say(b.GrepError)
		return
	}
	base := filePath(b.SearchPathURI)
	var lines []string
	for _, r := range b.Results {
		path := r.AbsolutePath
		if path == "" && r.RelativePath != "" && base != "" {
			path = strings.TrimSuffix(base, "/") + "/" + r.RelativePath
		}
		path = firstNonEmpty(path, r.RelativePath)
		text := strings.TrimRight(r.Content, "\r\n")
		d.hit(messages.Hit{Path: path, Line: int(r.LineNumber), Text: text})
		lines = append(lines, hitLine(path, int(r.LineNumber), text))
	}
	total := max(int(b.TotalResults), len(b.Results))
	d.hitCount = messages.Ptr(total)
	d.locations = hitLocations(d.hits)
	switch {
	case len(lines) > 0:
		d.say(strings.Join(lines, "\n"))
	case b.RawOutput != "":
		d.say(b.RawOutput)
	default:
		d.say("no results")
	}
})

type findBody struct {
	SearchDirectory string   `json:"searchDirectory"`
	Pattern         string   `json:"pattern"`
	Extensions      []string `json:"extensions"`
	Type            string   `json:"type"`
	TruncatedOutput string   `json:"truncatedOutput"`
	TruncatedTotal  wire.Int `json:"truncatedTotalResults"`
	TotalResults    wire.Int `json:"totalResults"`
	RawOutput       string   `json:"rawOutput"`
	FindError       string   `json:"findError"`
}

var findCall = fromBody(func(b *findBody, d *callDetail) {
	dir := filePath(b.SearchDirectory)
	d.title = "Find " + strconv.Quote(b.Pattern) + in(dir)
	d.locations = locate(dir, 0)
})

var findResult = fromBody(func(b *findBody, d *resultDetail) {
	if b.FindError != "" {
		d.say(b.FindError)
		return
	}
	out := firstNonEmpty(b.TruncatedOutput, b.RawOutput)
	n := 0
	for _, l := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
		l = strings.TrimSpace(l)
		if l == "" {
			continue
		}
		n++
		d.hit(messages.Hit{Path: l})
	}
	d.hitCount = messages.Ptr(max(int(b.TotalResults), n))
	d.locations = hitLocations(d.hits)
	if out == "" {
		out = "no results"
	}
	d.say(out)
})

type codeSearchMatch struct {
	Snippet    string   `json:"snippet"`
	LineNumber wire.Int `json:"lineNumber"`
}

type codeSearchBody struct {
	Query   string `json:"query"`
	Results []struct {
		Path    string            `json:"path"`
		Matches []codeSearchMatch `json:"matches"`
	} `json:"results"`
}

var codeSearchCall = fromBody(func(b *codeSearchBody, d *callDetail) {
	d.title = "Search the code for " + strconv.Quote(b.Query)
})

var codeSearchResult = fromBody(func(b *codeSearchBody, d *resultDetail) {
	var lines []string
	n := 0
	for _, r := range b.Results {
		path := filePath(r.Path)
		if len(r.Matches) == 0 {
			r.Matches = append(r.Matches, codeSearchMatch{}) // the file, as a hit of its own
		}
		for _, m := range r.Matches {
			n++
			text := strings.TrimSpace(m.Snippet)
			d.hit(messages.Hit{Path: path, Line: int(m.LineNumber), Text: text})
			lines = append(lines, hitLine(path, int(m.LineNumber), text))
		}
	}
	d.hitCount = messages.Ptr(n)
	d.locations = hitLocations(d.hits)
	d.say(strings.Join(lines, "\n"))
})

type referencesBody struct {
	AbsoluteURI string   `json:"absoluteUri"`
	Symbol      string   `json:"symbol"`
	Line        wire.Int `json:"line"`
	References  []struct {
		URI   string `json:"uri"`
		Range struct {
			Start struct {
				Row wire.Int `json:"row"`
			} `json:"startPosition"`
		} `json:"range"`
		Snippet string `json:"snippet"`
	} `json:"references"`
}

var findReferencesCall = fromBody(func(b *referencesBody, d *callDetail) {
	d.title = "Find references to " + b.Symbol
	d.locations = locate(filePath(b.AbsoluteURI), int(b.Line))
})

var findReferencesResult = fromBody(func(b *referencesBody, d *resultDetail) {
	var lines []string
	for _, r := range b.References {
		path := filePath(r.URI)
		line := int(r.Range.Start.Row) + 1 // document positions count rows from 0
		text := strings.TrimSpace(r.Snippet)
		d.hit(messages.Hit{Path: path, Line: line, Text: text})
		lines = append(lines, hitLine(path, line, text))
	}
	d.hitCount = messages.Ptr(len(b.References))
	d.locations = hitLocations(d.hits)
	d.say(strings.Join(lines, "\n"))
})

type queryBody struct {
	Query string `json:"query"`
}

// queryCall titles a search by its query field.
func queryCall(prefix string) func(stepView, *callDetail) {
	return fromBody(func(b *queryBody, d *callDetail) { d.title = prefix + strconv.Quote(b.Query) })
}

type pageListBody struct {
	Results []struct {
		URL   string `json:"url"`
		Title string `json:"title"`
	} `json:"results"`
}

var internalSearchResult = fromBody(func(b *pageListBody, d *resultDetail) {
	var lines []string
	for _, r := range b.Results {
		d.hit(messages.Hit{Path: r.URL, Text: r.Title})
		lines = append(lines, r.Title+" "+r.URL)
	}
	d.hitCount = messages.Ptr(len(b.Results))
	d.say(strings.Join(lines, "\n"))
})

type searchWebBody struct {
	Query        string        `json:"query"`
	Domain       string        `json:"domain"`
	WebDocuments []webDocument `json:"webDocuments"`
	Summary      string        `json:"summary"`
}

var searchWebCall = fromBody(func(b *searchWebBody, d *callDetail) {
	d.title = "Search the web for " + strconv.Quote(b.Query)
	if b.Domain != "" {
		d.title += " on " + b.Domain
	}
})

var searchWebResult = fromBody(func(b *searchWebBody, d *resultDetail) {
	var lines []string
	for _, w := range b.WebDocuments {
		d.hit(messages.Hit{Path: w.URL, Text: w.Title})
		lines = append(lines, strings.TrimSpace(w.Title+" "+w.URL))
	}
	d.hitCount = messages.Ptr(len(b.WebDocuments))
	out := b.Summary
	if len(lines) > 0 {
		if out != "" {
			out += "\n\n"
		}
		out += strings.Join(lines, "\n")
	}
	d.say(out)
})
