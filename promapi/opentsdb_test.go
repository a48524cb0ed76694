package promapi

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/hbtsdb/hbtsdb/schema/schematest"
)

// suggestCase is one /api/suggest request and the exact answer.
type suggestCase struct {
	name   string
	method string // GET: query is the query string; POST: query is the JSON body
	query  string
	status int
	body   string
}

// suggestCases are asked of the query fixture (fixture()): metrics cpu and mem,
// tags cpu (0, 1), host (web1, web2) and job (node). Error texts are OpenTSDB
// 2.4.1's (SuggestRpc, HttpJsonSerializer.parseSuggestV1).
var suggestCases = []suggestCase{
	{"every metric, in byte order", "GET", "type=metrics", 200, `["cpu","mem"]`},
	{"metrics with a prefix", "GET", "type=metrics&q=c", 200, `["cpu"]`},
	{"a prefix nothing has", "GET", "type=metrics&q=disk", 200, `[]`},
	{"tag keys leave out __name__", "GET", "type=tagk", 200, `["cpu","host","job"]`},
	{"tag values of every tag key", "GET", "type=tagv", 200, `["0","1","node","web1","web2"]`},
	{"max cuts the sorted list", "GET", "type=tagv&q=web&max=1", 200, `["web1"]`},
	{"max 0 is the default 25", "GET", "type=tagv&max=0", 200, `["0","1","node","web1","web2"]`},
	{"a negative max is the default 25", "GET", "type=metrics&max=-3", 200, `["cpu","mem"]`},
	{"POST takes a JSON body", "POST", `{"type":"tagk","q":"h"}`, 200, `["host"]`},
	{"POST takes max as a number", "POST", `{"type":"tagv","max":2}`, 200, `["0","1"]`},
	{"POST takes max as a string", "POST", `{"type":"tagv","q":"w","max":"1"}`, 200, `["web1"]`},
	{"an unknown type", "GET", "type=hosts", 400, `{"error":{"code":400,"message":"Invalid 'type' parameter:hosts"}}`},
	{"no type", "GET", "q=cpu", 400, `{"error":{"code":400,"message":"Missing parameter <code>type</code>"}}`},
	{"a max that is not a number", "GET", "type=metrics&max=ten", 400, `{"error":{"code":400,"message":"Unable to parse 'max' as a number"}}`},
	{"a max that is not an integer", "GET", "type=metrics&max=1.5", 400, `{"error":{"code":400,"message":"Unable to parse 'max' as a number"}}`},
	{"a max over 32 bits", "GET", "type=metrics&max=9999999999", 400, `{"error":{"code":400,"message":"Unable to parse 'max' as a number"}}`},
	{"POST without type", "POST", `{"q":"w"}`, 400, `{"error":{"code":400,"message":"Missing 'type' parameter"}}`},
	{"POST with an unknown type", "POST", `{"type":"tags"}`, 400, `{"error":{"code":400,"message":"Invalid 'type' parameter:tags"}}`},
	{"POST without a body", "POST", ``, 400, `{"error":{"code":400,"message":"Missing message content"}}`},
	{"POST with a bad max", "POST", `{"type":"tagk","max":"x"}`, 400, `{"error":{"code":400,"message":"Unable to parse 'max' as a number"}}`},
	{"POST with a body that is not JSON", "POST", `{"type":`, 400, `{"error":{"code":400,"message":"Unable to parse the given JSON: unexpected end of JSON input"}}`},
	{"POST with a field that is not a string", "POST", `{"type":["tagk"]}`, 400, `{"error":{"code":400,"message":"Unable to parse the given JSON: \"type\" is not a string"}}`},
}

func TestOpenTSDBSuggest(t *testing.T) {
	env := newQueryEnv(t, schematest.Backends()[0], Options{Query: QueryOptions{MaxQueryLength: 64}})
	for _, c := range suggestCases {
		t.Run(c.name, func(t *testing.T) {
			status, ctype, body := openTSDBAsk(t, env.srv.URL, c.method, "/api/suggest", c.query)
			if status != c.status || body != c.body {
				t.Errorf("%s /api/suggest %s = %d %s, want %d %s", c.method, c.query, status, body, c.status, c.body)
			}
			if ctype != "application/json; charset=UTF-8" {
				t.Errorf("Content-Type %q, want OpenTSDB's application/json; charset=UTF-8", ctype)
			}
		})
	}
	t.Run("a POST body over --query.max-length is refused", func(t *testing.T) {
		status, _, body := openTSDBAsk(t, env.srv.URL, "POST", "/api/suggest", `{"type":"metrics","q":"`+strings.Repeat("c", 64)+`"}`)
		want := `{"error":{"code":400,"message":"The request body is over 64 bytes (--query.max-length)"}}`
		if status != 400 || body != want {
			t.Errorf("= %d %s, want 400 %s", status, body, want)
		}
	})
}

func TestOpenTSDBSuggestStoreFailure(t *testing.T) {
	t.Run("a store that fails is a 500 with OpenTSDB's error object", func(t *testing.T) {
		srv := httptest.NewServer(mustRouter(t, Options{DB: StaticDB(writeOnlyStore{})}))
		defer srv.Close()
		status, _, body := openTSDBAsk(t, srv.URL, "GET", "/api/suggest", "type=tagk")
		want := `{"error":{"code":500,"message":"suggest tagk: promapi test: a write-only store serves no reads"}}`
		if status != 500 || body != want {
			t.Errorf("= %d %s, want 500 %s", status, body, want)
		}
	})
	t.Run("no store yet is a 503", func(t *testing.T) {
		srv := httptest.NewServer(mustRouter(t, Options{}))
		defer srv.Close()
		status, _, body := openTSDBAsk(t, srv.URL, "GET", "/api/suggest", "type=metrics")
		want := `{"error":{"code":503,"message":"suggest metrics: store unavailable: no store is configured"}}`
		if status != 503 || body != want {
			t.Errorf("= %d %s, want 503 %s", status, body, want)
		}
	})
}

func TestOpenTSDBVersionAndAggregators(t *testing.T) {
	srv := httptest.NewServer(mustRouter(t, Options{Version: "1.2.3", BuildInfo: BuildInfo{
		Revision: "0123456789abcdef", Branch: "hbtsdb-1.2.3", BuildUser: "ci", BuildDate: "2026-12-01T10:00:00Z"}}))
	defer srv.Close()
	for _, c := range []struct{ method, path, want string }{
		{"GET", "/api/version", `{"short_revision":"012345678","repo":"github.com/hbtsdb/hbtsdb","host":"","version":"1.2.3",` +
			`"full_revision":"0123456789abcdef","repo_status":"","user":"ci","branch":"hbtsdb-1.2.3","timestamp":"1796119200"}`},
		{"GET", "/api/aggregators", `["mult","p90","zimsum","mimmax","sum","p50","none","p95","ep99r7","pfsum","p75","p99",` +
			`"ep99r3","ep95r7","min","avg","ep75r7","dev","ep95r3","ep75r3","ep50r7","ep90r7","mimmin","p999","ep50r3","ep90r3",` +
			`"ep999r7","last","max","count","diff","median","squareSum","ep999r3","first"]`},
	} {
		for _, method := range []string{"GET", "POST"} {
			status, _, body := openTSDBAsk(t, srv.URL, method, c.path, "")
			if status != 200 || body != c.want {
				t.Errorf("%s %s = %d %s, want 200 %s", method, c.path, status, body, c.want)
			}
		}
	}
	status, _, _ := openTSDBAsk(t, srv.URL, "DELETE", "/api/suggest", "")
	if status != http.StatusMethodNotAllowed {
		t.Errorf("DELETE /api/suggest = %d, want 405", status)
	}
}

// openTSDBAskTimeout bounds one request of openTSDBAsk: a TSD whose HBase has
// died retries its writes for ever, and the test must fail rather than hang.
const openTSDBAskTimeout = 2 * time.Minute

// openTSDBAsk sends one request to base+path: with GET, query is the query
// string; otherwise it is the body. It returns the status, the Content-Type and
// the body without its trailing newline.
func openTSDBAsk(t testing.TB, base, method, path, query string) (int, string, string) {
	t.Helper()
	status, ctype, body, err := openTSDBDo(base, method, path, query)
	if err != nil {
		t.Fatal(err)
	}
	return status, ctype, body
}

// openTSDBDo is openTSDBAsk that returns its failure, for goroutines.
func openTSDBDo(base, method, path, query string) (int, string, string, error) {
	u := base + path
	var body io.Reader
	if method == "GET" {
		if query != "" {
			u += "?" + query
		}
	} else {
		body = strings.NewReader(query)
	}
	req, err := http.NewRequest(method, u, body)
	if err != nil {
		return 0, "", "", err
	}
	resp, err := (&http.Client{Timeout: openTSDBAskTimeout}).Do(req)
	if err != nil {
		return 0, "", "", fmt.Errorf("%s %s: %w (no answer within %v: is the server's store down?)", method, u, err, openTSDBAskTimeout)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, "", "", fmt.Errorf("%s %s: read the answer: %w", method, u, err)
	}
	return resp.StatusCode, resp.Header.Get("Content-Type"), strings.TrimSuffix(string(b), "\n"), nil
}
