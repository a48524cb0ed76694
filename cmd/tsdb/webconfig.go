package main

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"

	"github.com/alecthomas/kingpin/v2"
	"github.com/hbtsdb/hbtsdb/promapi"
	"github.com/hbtsdb/hbtsdb/web/ui"
	"github.com/prometheus/exporter-toolkit/web"
	"go.yaml.in/yaml/v2"
)

// webOptions are tsdb serve's TLS and authentication settings: Prometheus' web
// configuration file (--web.config.file), served by exporter-toolkit exactly as
// Prometheus serves it, and the users whose basic-auth credentials may only read
// (--web.read-only-users) or only write (--web.write-only-users). Users in
// neither list may call every endpoint, the admin ones included.
type webOptions struct {
	configFile     string
	readOnlyUsers  []string
	writeOnlyUsers []string
	tls            bool // the file configures TLS (known after check)
}

// adminNote ends both restricted-user flags' help: what neither role may call.
const adminNote = " Endpoints that neither read nor write (admin ones, such as /debug/pprof/ with " +
	"--web.enable-pprof) answer both read-only and write-only users 403: only users in neither list may call them."

func (w *webOptions) register(cmd *kingpin.CmdClause) {
	flag(cmd, "web.config.file", "Prometheus' web configuration file: TLS (tls_server_config, client "+
		"certificates with client_auth_type and client_ca_file), HTTP basic auth (basic_auth_users, bcrypt "+
		"hashes) and http_server_config, as for Prometheus. Read again on every request and TLS connection: "+
		"changed passwords and certificates apply without a restart. Empty: plain HTTP, no authentication.").
		Default("").StringVar(&w.configFile)
	flag(cmd, "web.read-only-users", "Comma-separated basic_auth_users of --web.config.file that may only "+
		"read (queries, the query page at /, remote read, /api/v1/export, health); any other endpoint, such as remote write "+
		"and /api/put, answers them 403."+adminNote).Default("").StringsVar(&w.readOnlyUsers)
	flag(cmd, "web.write-only-users", "Comma-separated basic_auth_users of --web.config.file that may only "+
		"write (remote write, /api/put, OTLP, /api/v1/import, health), such as the Prometheus servers that remote-write; any other "+
		"endpoint, such as queries and remote read, answers them 403. A user may not be in both lists."+adminNote).
		Default("").StringsVar(&w.writeOnlyUsers)
}

// splitUsers flattens repeated and comma-separated flag values into user names.
func splitUsers(values []string) []string {
	var users []string
	for _, v := range values {
		for _, name := range strings.Split(v, ",") {
			if name = strings.TrimSpace(name); name != "" {
				users = append(users, name)
			}
		}
	}
	return users
}

// check validates the web configuration file as Prometheus does at start (its
// YAML, the bcrypt hashes, the certificates and keys it names) and the
// restricted users against it. Errors name the file and the flag.
func (w *webOptions) check(logger *slog.Logger) error {
	w.readOnlyUsers, w.writeOnlyUsers = splitUsers(w.readOnlyUsers), splitUsers(w.writeOnlyUsers)
	lists := []struct {
		flag  string
		users []string
	}{{"--web.read-only-users", w.readOnlyUsers}, {"--web.write-only-users", w.writeOnlyUsers}}
	if w.configFile == "" {
		for _, l := range lists {
			if len(l.users) > 0 {
				// Without authentication the user of a request is whatever
				// it claims, so a restriction would restrict nobody.
				return fmt.Errorf("%s needs --web.config.file with basic_auth_users: "+
					"without authentication every client could read and write", l.flag)
			}
		}
		return nil
	}
	for _, u := range w.readOnlyUsers {
		if slices.Contains(w.writeOnlyUsers, u) {
			// Either reading of "both" (may do both, may do neither) would
			// surprise someone; an unrestricted user is one in neither list.
			return fmt.Errorf("user %q is in both --web.read-only-users and --web.write-only-users: "+
				"a user who may read and write belongs in neither", u)
		}
	}
	if err := web.Validate(w.configFile); err != nil {
		return fmt.Errorf("--web.config.file %s: %w", w.configFile, err)
	}
	content, err := os.ReadFile(w.configFile)
	if err != nil {
		return fmt.Errorf("--web.config.file %s: %w", w.configFile, err)
	}
	var c web.Config
	if err := yaml.Unmarshal(content, &c); err != nil {
		return fmt.Errorf("--web.config.file %s: %w", w.configFile, err)
	}
	for _, l := range lists {
		for _, u := range l.users {
			if _, ok := c.Users[u]; !ok {
				return fmt.Errorf("%s: user %q is not in the basic_auth_users of --web.config.file %s",
					l.flag, u, w.configFile)
			}
		}
	}
	w.tls = c.TLSConfig.IsEnabled()
	if len(c.Users) > 0 && !w.tls {
		logger.Warn("basic auth without TLS: passwords cross the network in clear text; "+
			"add tls_server_config to the web config file", "web_config_file", w.configFile)
	}
	return nil
}

// handler wraps next with the restricted users' allow-lists. It runs after
// exporter-toolkit's authentication, so the user of the request's basic auth is
// the authenticated one.
func (w *webOptions) handler(next http.Handler) http.Handler {
	if len(w.readOnlyUsers) == 0 && len(w.writeOnlyUsers) == 0 {
		return next
	}
	readOnly, writeOnly := slices.Clone(w.readOnlyUsers), slices.Clone(w.writeOnlyUsers)
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if user, _, ok := r.BasicAuth(); ok {
			switch {
			case slices.Contains(readOnly, user) && !readEndpoint(r.URL.Path):
				http.Error(rw, "403 Forbidden: this user may only read (--web.read-only-users)", http.StatusForbidden)
				return
			case slices.Contains(writeOnly, user) && !writeEndpoint(r.URL.Path):
				http.Error(rw, "403 Forbidden: this user may only write (--web.write-only-users)", http.StatusForbidden)
				return
			}
		}
		next.ServeHTTP(rw, r)
	})
}

// readEndpoint reports whether path is one of the endpoints that only read. It
// is a list of what is allowed, so that an endpoint added later is closed to
// read-only users until it is listed here.
func readEndpoint(path string) bool {
	switch path {
	case "/-/healthy", "/-/ready", "/metrics",
		"/", // the query page (web/ui), whose assets are below
		"/api/v1/read", "/api/v1/last", "/api/v1/metadata",
		"/health", "/api/v1/export", // VictoriaMetrics' (promapi/vmroutes.go)
		"/api/query", "/api/query/last", "/api/version", "/api/aggregators", "/api/suggest", // OpenTSDB's (promapi/otsdbquery.go, opentsdb.go)
		"/api/search/lookup", "/api/config/filters", // OpenTSDB's (promapi/opentsdb_lookup.go, opentsdb.go)
		"/api/v1/query", "/api/v1/query_range", "/api/v1/query_exemplars",
		"/api/v1/series", "/api/v1/labels", "/api/v1/format_query", "/api/v1/parse_query":
		return true
	}
	if rest, ok := strings.CutPrefix(path, ui.AssetsPrefix); ok {
		return rest != "" && !strings.Contains(rest, "/")
	}
	if rest, ok := strings.CutPrefix(path, "/api/v1/label/"); ok {
		name, tail, _ := strings.Cut(rest, "/")
		return name != "" && tail == "values"
	}
	if rest, ok := strings.CutPrefix(path, "/api/v1/status/"); ok {
		return rest != "" && !strings.Contains(rest, "/")
	}
	return false
}

// writeEndpoint reports whether path is one of the endpoints that write, or
// health, which a writer's load balancer or sidecar may probe. Like
// readEndpoint it is an allow-list: an endpoint added later is closed to
// write-only users until it is listed here.
func writeEndpoint(path string) bool {
	switch path {
	case "/-/healthy", "/-/ready", "/api/v1/write", "/api/put", promapi.OTLPPath,
		"/health", "/api/v1/import", "/api/v1/import/prometheus": // VictoriaMetrics' (promapi/vmroutes.go)
		return true
	}
	return false
}

// serve serves srv on ln: plain HTTP without --web.config.file, as before;
// otherwise through exporter-toolkit, which adds TLS and basic auth and reads
// the file again on every request and TLS handshake.
func (w *webOptions) serve(ln net.Listener, srv *http.Server, logger *slog.Logger) error {
	if w.configFile == "" {
		return srv.Serve(ln)
	}
	file := w.configFile
	noSystemd := false
	listen := []string{ln.Addr().String()}
	err := web.Serve(ln, srv, &web.FlagConfig{WebConfigFile: &file, WebListenAddresses: &listen,
		WebSystemdSocket: &noSystemd}, logger.With("component", "web"))
	if err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("--web.config.file %s: %w", file, err)
	}
	return err
}
