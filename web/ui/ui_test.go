package ui

import (
	"compress/gzip"
	"crypto/sha256"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

func request(t *testing.T, method, path string, header map[string]string) (*http.Response, []byte) {
	t.Helper()
	req := httptest.NewRequest(method, path, nil)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	Handler().ServeHTTP(rec, req)
	resp := rec.Result()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, body
}

// assetRefs are the asset paths index.html names (href= and src=).
var assetRefs = regexp.MustCompile(`(?:href|src)="(assets/[^"]+)"`)

func TestPageAndItsAssets(t *testing.T) {
	resp, body := request(t, "GET", "/", nil)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/html; charset=utf-8" {
		t.Fatalf("GET / = %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	for header, want := range map[string]string{
		"Cache-Control":          "no-cache",
		"X-Content-Type-Options": "nosniff",
		"Content-Security-Policy": "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; " +
			"img-src 'self' data:; connect-src 'self'; object-src 'none'; base-uri 'self'; frame-ancestors 'none'",
	} {
		if got := resp.Header.Get(header); got != want {
			t.Errorf("GET / %s = %q, want %q", header, got, want)
		}
	}
	if strings.Contains(string(body), "{{") {
		t.Errorf("index.html has a placeholder the build did not fill:\n%s", body)
	}
	// Nothing is loaded from another host: the page works offline.
	if m := regexp.MustCompile(`(?:href|src)="(?:https?:)?//`).FindString(string(body)); m != "" {
		t.Errorf("index.html loads %s… from another host", m)
	}

	types := map[string]string{}
	for _, m := range assetRefs.FindAllStringSubmatch(string(body), -1) {
		path := "/" + m[1]
		resp, asset := request(t, "GET", path, nil)
		if resp.StatusCode != 200 || len(asset) == 0 {
			t.Errorf("GET %s (named by index.html) = %d, %d bytes", path, resp.StatusCode, len(asset))
			continue
		}
		if got := resp.Header.Get("Cache-Control"); got != "public, max-age=31536000, immutable" {
			t.Errorf("GET %s Cache-Control = %q, want a year, immutable (the name is content-hashed)", path, got)
		}
		types[path[strings.LastIndex(path, "."):]] = resp.Header.Get("Content-Type")
	}
	for ext, want := range map[string]string{
		".js": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8", ".txt": "text/plain; charset=utf-8",
	} {
		if types[ext] != want {
			t.Errorf("index.html's %s asset: Content-Type %q, want %q (all: %v)", ext, types[ext], want, types)
		}
	}
}

func TestGzipAndRevalidation(t *testing.T) {
	plain, body := request(t, "GET", "/", nil)
	gz, zipped := request(t, "GET", "/", map[string]string{"Accept-Encoding": "br, gzip;q=0.8"})
	if gz.Header.Get("Content-Encoding") != "gzip" || !strings.Contains(gz.Header.Get("Vary"), "Accept-Encoding") {
		t.Fatalf("Accept-Encoding gzip: Content-Encoding %q, Vary %q", gz.Header.Get("Content-Encoding"), gz.Header.Get("Vary"))
	}
	zr, err := gzip.NewReader(strings.NewReader(string(zipped)))
	if err != nil {
		t.Fatal(err)
	}
	unzipped, err := io.ReadAll(zr)
	if err != nil || string(unzipped) != string(body) {
		t.Fatalf("the gzipped page is not the page: %v", err)
	}
	if plain.Header.Get("ETag") == "" || plain.Header.Get("ETag") == gz.Header.Get("ETag") {
		t.Errorf("ETags plain %q, gzip %q: want two different ones", plain.Header.Get("ETag"), gz.Header.Get("ETag"))
	}
	if resp, _ := request(t, "GET", "/", map[string]string{"Accept-Encoding": "gzip;q=0"}); resp.Header.Get("Content-Encoding") != "" {
		t.Errorf("gzip;q=0 got Content-Encoding %q", resp.Header.Get("Content-Encoding"))
	}
	resp, rest := request(t, "GET", "/", map[string]string{"If-None-Match": plain.Header.Get("ETag")})
	if resp.StatusCode != http.StatusNotModified || len(rest) != 0 {
		t.Errorf("If-None-Match with the page's ETag: %d, %d bytes; want 304 and nothing", resp.StatusCode, len(rest))
	}
	if resp, rest := request(t, "HEAD", "/", nil); resp.StatusCode != 200 || len(rest) != 0 {
		t.Errorf("HEAD / = %d, %d bytes", resp.StatusCode, len(rest))
	}
}

func TestUnknownPathsAndMethods(t *testing.T) {
	for _, path := range []string{"/index.html", "/assets/", "/assets/nope.js", "/assets/../index.html", "/x"} {
		if resp, _ := request(t, "GET", path, nil); resp.StatusCode != 404 {
			t.Errorf("GET %s = %d, want 404", path, resp.StatusCode)
		}
	}
	if resp, _ := request(t, "POST", "/", nil); resp.StatusCode != 405 || resp.Header.Get("Allow") != "GET, HEAD" {
		t.Errorf("POST / = %d (Allow %q), want 405", resp.StatusCode, resp.Header.Get("Allow"))
	}
}

func TestAcceptsGzip(t *testing.T) {
	for header, want := range map[string]bool{
		"": false, "gzip": true, "GZIP": true, "deflate, gzip": true, "gzip;q=0": false, "gzip; q=0.000": false,
		"gzip;q=0.5": true, "br": false, "x-gzip": false,
	} {
		r := httptest.NewRequest("GET", "/", nil)
		r.Header.Set("Accept-Encoding", header)
		if got := acceptsGzip(r); got != want {
			t.Errorf("acceptsGzip(%q) = %v, want %v", header, got, want)
		}
	}
}

// TestDistIsBuiltFromSrc: dist/ was built from the sources as they are (see
// build.mjs, which writes the same hash to dist/SOURCE). When it fails, run
// `make ui` and commit web/ui/dist/.
func TestDistIsBuiltFromSrc(t *testing.T) {
	files := []string{"build.mjs", "package.json", "package-lock.json"}
	err := filepath.WalkDir("src", func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			files = append(files, p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(files)
	h := sha256.New()
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		h.Write([]byte(f + "\x00"))
		h.Write(b)
		h.Write([]byte{0})
	}
	want := fmt.Sprintf("sha256:%x\n", h.Sum(nil))
	got, err := dist.ReadFile("dist/SOURCE")
	if err != nil || string(got) != want {
		t.Errorf("dist/SOURCE = %q (%v), but the sources hash to %q: dist/ is not built from "+
			"web/ui/src/ as it is; run `make ui` and commit web/ui/dist/", got, err, want)
	}
}
