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
	"github.com/prometheus/exporter-toolkit/web"
	"go.yaml.in/yaml/v2"
)

// webOptions are tsdb serve's TLS and authentication settings: Prometheus' web
// configuration file (--web.config.file), served by exporter-toolkit exactly as
// Prometheus serves it, and the users whose basic-auth credentials may only read
// (--web.read-only-users).
type webOptions struct {
	configFile    string
	readOnlyUsers []string
}

func (w *webOptions) register(cmd *kingpin.CmdClause) {
	flag(cmd, "web.config.file", "Prometheus' web configuration file: TLS (tls_server_config, client "+
		"certificates with client_auth_type and client_ca_file), HTTP basic auth (basic_auth_users, bcrypt "+
		"hashes) and http_server_config, as for Prometheus. Read again on every request and TLS connection: "+
		"changed passwords and certificates apply without a restart. Empty: plain HTTP, no authentication.").
		Default("").StringVar(&w.configFile)
	flag(cmd, "web.read-only-users", "Comma-separated basic_auth_users of --web.config.file that may only "+
		"read (queries, remote read, health); any other endpoint, such as remote write and /api/put, answers "+
		"them 403.").Default("").StringsVar(&w.readOnlyUsers)
}

// check validates the web configuration file as Prometheus does at start (its
// YAML, the bcrypt hashes, the certificates and keys it names) and the
// read-only users against it. Errors name the file.
func (w *webOptions) check(logger *slog.Logger) error {
	var users []string
	for _, u := range w.readOnlyUsers {
		for _, name := range strings.Split(u, ",") {
			if name = strings.TrimSpace(name); name != "" {
				users = append(users, name)
			}
		}
	}
	w.readOnlyUsers = users
	if w.configFile == "" {
		if len(w.readOnlyUsers) > 0 {
			return errors.New("--web.read-only-users needs --web.config.file with basic_auth_users: " +
				"without authentication every client could write")
		}
		return nil
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
	for _, u := range w.readOnlyUsers {
		if _, ok := c.Users[u]; !ok {
			return fmt.Errorf("--web.read-only-users: user %q is not in the basic_auth_users of --web.config.file %s",
				u, w.configFile)
		}
	}
	if len(c.Users) > 0 && !c.TLSConfig.IsEnabled() {
		logger.Warn("basic auth without TLS: passwords cross the network in clear text; "+
			"add tls_server_config to the web config file", "web_config_file", w.configFile)
	}
	return nil
}

// handler wraps next with the read-only users' restriction. It runs after
// exporter-toolkit's authentication, so the user of the request's basic auth is
// the authenticated one.
func (w *webOptions) handler(next http.Handler) http.Handler {
	if len(w.readOnlyUsers) == 0 {
		return next
	}
	readOnly := slices.Clone(w.readOnlyUsers)
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if user, _, ok := r.BasicAuth(); ok && slices.Contains(readOnly, user) && !readEndpoint(r.URL.Path) {
			http.Error(rw, "403 Forbidden: this user may only read (--web.read-only-users)", http.StatusForbidden)
			return
		}
		next.ServeHTTP(rw, r)
	})
}

// readEndpoint reports whether path is one of the endpoints that only read. It
// is a list of what is allowed, so that an endpoint added later is closed to
// read-only users until it is listed here.
func readEndpoint(path string) bool {
	switch path {
	case "/-/healthy", "/-/ready",
		"/api/v1/read", "/api/v1/last", "/api/v1/metadata",
		"/api/v1/query", "/api/v1/query_range", "/api/v1/query_exemplars",
		"/api/v1/series", "/api/v1/labels", "/api/v1/format_query", "/api/v1/parse_query":
		return true
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
