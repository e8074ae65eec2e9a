package httphost

import (
	"embed"
	"io/fs"
	"net/http"
	"time"
)

// The web console (docs/CONSOLE.md): static files written here, embedded,
// served at / on the API's listener. The page holds no secret: it asks for
// the token and talks to the API like any other client.

//go:embed console
var consoleFiles embed.FS

// consoleCSP lets the page load its own scripts, styles and API alone: no
// inline script or style, no other origin, no frames, no forms posted
// elsewhere.
const consoleCSP = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; " +
	"base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

func consoleHeaders(h http.Header) {
	h.Set("Content-Security-Policy", consoleCSP)
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-cache")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
}

// consoleHandler serves the console's files: GET / the page,
// GET /console/... its scripts and styles.
func consoleHandler() (index, assets http.Handler) {
	sub, err := fs.Sub(consoleFiles, "console")
	if err != nil {
		panic(err) // the embedded tree is part of the build
	}
	page, err := fs.ReadFile(sub, "index.html")
	if err != nil {
		panic(err)
	}
	files := http.StripPrefix("/console/", http.FileServerFS(sub))
	index = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		consoleHeaders(w.Header())
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write(page)
	})
	assets = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		consoleHeaders(w.Header())
		if r.URL.Path == "/console/" || r.URL.Path == "/console/index.html" {
			http.NotFound(w, r)
			return
		}
		files.ServeHTTP(w, r)
	})
	return index, assets
}

// signInTTL is how long a sign-in code is good for (once).
var signInTTL = 10 * time.Minute

// SignInCode mints a one-time code that the console exchanges for the
// token (POST /v1/signin): a sign-in link carries it in the URL's
// fragment, which browsers send to no server, so no log holds the token.
func (srv *Server) SignInCode() (string, error) {
	return srv.s.signins.mint()
}

// signIn is POST /v1/signin {"code"}: the token, for a good code, once.
func (s *server) signIn(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Code string `json:"code"`
	}
	if !decodeBody(w, r, &req) {
		return
	}
	if !s.signins.use(req.Code) {
		w.Header().Set("Connection", "close")
		writeError(w, http.StatusUnauthorized, "unknown, used or expired sign-in code")
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, map[string]string{"token": s.cfg.token})
}
