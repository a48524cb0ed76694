package main

import (
	"net/http"
	"net/http/pprof"
)

// registerDebugFlags binds --web.enable-pprof. It is off by default, as in
// Prometheus: profiles show the process' internals (goroutine stacks name every
// request in flight) and a CPU profile costs CPU while it runs.
func (o *serveOptions) registerDebugFlags() {
	o.flags.flag("web.enable-pprof", "", "Serve Go's runtime profiles (net/http/pprof) under /debug/pprof/: heap, "+
		"goroutines, CPU, ... for go tool pprof. With --web.config.file they are behind the same authentication "+
		"as the API.").Default("false").BoolVar(&o.pprof)
}

// withDebug returns api with /debug/pprof/ in front of it when --web.enable-pprof
// is set, and api itself otherwise, so that /debug/pprof/ is 404 when off. The
// handlers go on a mux of this server's own, never on http.DefaultServeMux, which
// importing net/http/pprof fills as a side effect: nothing in this process serves
// the default mux, and a library that did would not expose profiles unasked.
func (o *serveOptions) withDebug(api http.Handler) http.Handler {
	if !o.pprof {
		return api
	}
	mux := http.NewServeMux()
	// pprof.Index serves the named profiles too (/debug/pprof/heap, goroutine,
	// allocs, block, mutex, threadcreate); the four below are not runtime/pprof
	// profiles and need their own handlers.
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	mux.Handle("/", api)
	return mux
}
