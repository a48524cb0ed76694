package main

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// otlpGaugeJSON is an OTLP/HTTP JSON request with one gauge point of
// service "svc": stored as otlp_gauge{job="svc", host=host}.
func otlpGaugeJSON(host string, unixSec int64, v float64) string {
	return fmt.Sprintf(`{"resourceMetrics":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"svc"}}]},`+
		`"scopeMetrics":[{"metrics":[{"name":"otlp.gauge","gauge":{"dataPoints":[{"timeUnixNano":"%d000000000",`+
		`"asDouble":%g,"attributes":[{"key":"host","value":{"stringValue":%q}}]}]}}]}]}]}`, unixSec, v, host)
}

func postOTLP(t *testing.T, base, user, pass, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, base+"/api/v1/otlp/v1/metrics", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.SetBasicAuth(user, pass)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestServeOTLPRoles: the write-only and the unrestricted user may send OTLP,
// the read-only user is refused (403, nothing stored), and what was sent is
// queryable.
func TestServeOTLPRoles(t *testing.T) {
	s := startRolesServer(t)
	base := "http://" + s.addr
	if code, body := postOTLP(t, base, "prometheus", "pw-prometheus", otlpGaugeJSON("w", now, 1.5)); code != 200 || body != "{}" {
		t.Errorf("write-only user's OTLP: %d %q, want 200 {}", code, body)
	}
	if code, body := postOTLP(t, base, "admin", "pw-admin", otlpGaugeJSON("a", now, 2.5)); code != 200 || body != "{}" {
		t.Errorf("unrestricted user's OTLP: %d %q, want 200 {}", code, body)
	}
	const readOnly = "403 Forbidden: this user may only read (--web.read-only-users)\n"
	if code, body := postOTLP(t, base, "grafana", "pw-grafana", otlpGaugeJSON("r", now, 3.5)); code != 403 || body != readOnly {
		t.Errorf("read-only user's OTLP: %d %q, want 403 %q", code, body, readOnly)
	}
	query := base + "/api/v1/query?query=" + url.QueryEscape(`otlp_gauge`) + fmt.Sprintf("&time=%d", now)
	code, body := do(t, http.DefaultClient, "GET", query, "grafana", "pw-grafana", "")
	want := fmt.Sprintf(`{"status":"success","data":{"resultType":"vector","result":[`+
		`{"metric":{"__name__":"otlp_gauge","host":"a","job":"svc"},"value":[%[1]d,"2.5"]},`+
		`{"metric":{"__name__":"otlp_gauge","host":"w","job":"svc"},"value":[%[1]d,"1.5"]}]}}`, now)
	if code != 200 || body != want {
		t.Errorf("query: %d\n%s\nwant\n%s", code, body, want)
	}
}

// TestServeRefusesBadOTLPFlags: choices Prometheus refuses are refused at
// start, naming the flags.
func TestServeRefusesBadOTLPFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--otlp.delta-to-cumulative", "--otlp.native-delta-ingestion"},
			"tsdb serve: --otlp.delta-to-cumulative and --otlp.native-delta-ingestion exclude each other " +
				"(Prometheus: otlp-deltatocumulative and otlp-native-delta-ingestion)\n"},
		{[]string{"--otlp.promote-all-resource-attributes", "--otlp.promote-resource-attributes=k8s.pod.name"},
			"tsdb serve: promapi: OTLPOptions.Config: --otlp.promote-all-resource-attributes and " +
				"--otlp.promote-resource-attributes cannot be configured simultaneously\n"},
		{[]string{"--otlp.ignore-resource-attributes=a"},
			"tsdb serve: promapi: OTLPOptions.Config: --otlp.ignore-resource-attributes cannot be configured unless " +
				"--otlp.promote-all-resource-attributes is true\n"},
		{[]string{"--otlp.promote-resource-attributes=a,,b"},
			"tsdb serve: promapi: OTLPOptions.Config: invalid --otlp.promote-resource-attributes: empty promoted OTel " +
				"resource attribute\n"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			args := append([]string{"serve", "--storage=embedded:" + t.TempDir(), "--listen=127.0.0.1:0"}, tc.args...)
			code, _, stderr := tsdb(t, args...)
			if code != 1 || stderr != tc.want {
				t.Errorf("exit %d, stderr:\n%s\nwant:\n%s", code, stderr, tc.want)
			}
		})
	}
	code, _, stderr := tsdb(t, "serve", "--otlp.translation-strategy=Dots")
	want := "tsdb: --otlp.translation-strategy: \"Dots\" is not one of UnderscoreEscapingWithSuffixes, " +
		"UnderscoreEscapingWithoutSuffixes, NoUTF8EscapingWithSuffixes, NoTranslation (see tsdb --help)\n"
	if code != 2 || stderr != want {
		t.Errorf("exit %d, stderr:\n%s\nwant:\n%s", code, stderr, want)
	}
}
