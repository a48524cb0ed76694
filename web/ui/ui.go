// Package ui serves hbtsdb's built-in query page: a PromQL editor with
// completion (Prometheus' codemirror-promql), instant and range queries, a
// chart (uPlot) and a table, all talking to this server's Prometheus API.
//
// The page is built from src/ by `make ui` (npm and esbuild; see
// docs/query-page.md) into dist/, which is committed and embedded here, so
// building and running hbtsdb needs no npm and the page needs no network:
// nothing is loaded from anywhere but this server.
//
// Handler serves dist/index.html at "/" and the files of dist/assets/ under
// AssetsPrefix. Asset names carry a hash of their content, so browsers may
// cache them for a year; index.html is revalidated on every load (ETag), so a
// new binary's page is picked up at once. Text is served gzip-compressed to
// clients that accept it.
//
// This package must import nothing of hbtsdb's: it only serves files.
package ui

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"net/http"
	"path"
	"strings"
	"sync"
	"time"
)

// AssetsPrefix is the path under which the page's scripts, styles and
// license texts are served.
const AssetsPrefix = "/assets/"

//go:embed dist
var dist embed.FS

// file is one embedded file, ready to serve.
type file struct {
	body        []byte
	gzipped     []byte // nil when compression does not pay
	contentType string
	etag        string
	cache       string // Cache-Control
}

// contentTypes are set here rather than looked up in the system's MIME
// tables, which differ between machines (and served .js as text/plain on some).
var contentTypes = map[string]string{
	".html": "text/html; charset=utf-8",
	".js":   "text/javascript; charset=utf-8",
	".css":  "text/css; charset=utf-8",
	".txt":  "text/plain; charset=utf-8",
	".map":  "application/json",
}

// contentSecurityPolicy allows what the page does and nothing more: its own
// scripts, and requests to this server. Inline styles are allowed because
// CodeMirror and uPlot set them; inline scripts are not.
const contentSecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; " +
	"img-src 'self' data:; connect-src 'self'; object-src 'none'; base-uri 'self'; frame-ancestors 'none'"

var (
	loadOnce sync.Once
	files    map[string]*file // by URL path: "/" and AssetsPrefix + name
	loadErr  error
)

// load reads and compresses the embedded files once, on the first request.
func load() {
	files = map[string]*file{}
	loadErr = fs.WalkDir(dist, "dist", func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		body, err := dist.ReadFile(name)
		if err != nil {
			return err
		}
		rel := strings.TrimPrefix(name, "dist/")
		f := &file{body: body, contentType: contentTypes[path.Ext(rel)]}
		if f.contentType == "" {
			f.contentType = "application/octet-stream"
		}
		sum := sha256.Sum256(body)
		f.etag = `"` + hex.EncodeToString(sum[:8]) + `"`
		if gz := compress(body); len(gz) < len(body)*9/10 {
			f.gzipped = gz
		}
		switch {
		case rel == "index.html":
			f.cache = "no-cache"
			files["/"] = f
		case strings.HasPrefix(rel, "assets/"):
			// Hashed names: the content of a name never changes.
			f.cache = "public, max-age=31536000, immutable"
			files[AssetsPrefix+strings.TrimPrefix(rel, "assets/")] = f
		}
		return nil
	})
	if loadErr == nil && files["/"] == nil {
		loadErr = fmt.Errorf("ui: dist/index.html is not embedded; run `make ui`")
	}
}

func compress(b []byte) []byte {
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	_, _ = zw.Write(b)
	_ = zw.Close()
	return buf.Bytes()
}

// Handler serves the page at "/" and its assets under AssetsPrefix, for GET
// and HEAD; any other path is 404 and any other method 405.
func Handler() http.Handler {
	return http.HandlerFunc(serve)
}

func serve(w http.ResponseWriter, r *http.Request) {
	loadOnce.Do(load)
	if loadErr != nil {
		http.Error(w, loadErr.Error(), http.StatusInternalServerError)
		return
	}
	f := files[r.URL.Path]
	if f == nil {
		http.NotFound(w, r)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "405 method not allowed", http.StatusMethodNotAllowed)
		return
	}
	h := w.Header()
	h.Set("Content-Type", f.contentType)
	h.Set("Cache-Control", f.cache)
	h.Set("X-Content-Type-Options", "nosniff")
	if r.URL.Path == "/" {
		h.Set("Content-Security-Policy", contentSecurityPolicy)
		h.Set("Referrer-Policy", "same-origin")
	}
	body := f.body
	etag := f.etag
	if f.gzipped != nil {
		h.Add("Vary", "Accept-Encoding")
		if acceptsGzip(r) {
			body = f.gzipped
			h.Set("Content-Encoding", "gzip")
			// A different representation needs a different validator (RFC 9110 8.8.3).
			etag = strings.TrimSuffix(f.etag, `"`) + `-gzip"`
		}
	}
	h.Set("ETag", etag)
	// ServeContent answers If-None-Match with 304 and Range requests, and
	// sets Content-Length; the zero time sends no Last-Modified.
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(body))
}

// acceptsGzip reports whether the request's Accept-Encoding lists gzip with a
// non-zero quality.
func acceptsGzip(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept-Encoding"), ",") {
		coding, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		if strings.EqualFold(strings.TrimSpace(coding), "gzip") {
			q := strings.ReplaceAll(strings.TrimSpace(params), " ", "")
			return q != "q=0" && q != "q=0.0" && q != "q=0.00" && q != "q=0.000"
		}
	}
	return false
}
