package hbase

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"os"
	"strings"
)

// gohbaseLogger is the logger handed to gohbase. gohbase logs at Error level two
// kinds of events that lose nothing, and such records are lowered to Debug:
//
//   - every region lookup that ends because the region's context was cancelled,
//     which is how it retires the regions of a dropped table or of a closed client;
//   - an idle region client closed for a read timeout with no call in flight.
//     gohbase arms a connection's read deadline after writing a call; when the
//     answer is read before that, the in-flight count goes to -1 and back to 0 and
//     the deadline outlives the call, so the idle connection "times out" 30s later
//     (region.client.send/inFlightUp, gohbase be525bde7d77). The next call simply
//     reconnects.
//
// Everything else passes through unchanged.
func gohbaseLogger(l *slog.Logger) *slog.Logger {
	return slog.New(&benignAsDebug{l.Handler()}).With("component", "gohbase")
}

type benignAsDebug struct{ slog.Handler }

func (h *benignAsDebug) Enabled(ctx context.Context, level slog.Level) bool {
	// Decided in Handle, once the record's attributes are known.
	return h.Handler.Enabled(ctx, level) || level >= slog.LevelWarn
}

func (h *benignAsDebug) Handle(ctx context.Context, r slog.Record) error {
	if r.Level >= slog.LevelWarn && (cancelled(r) || idleTimeout(r)) {
		r.Level = slog.LevelDebug
	}
	if !h.Handler.Enabled(ctx, r.Level) {
		return nil
	}
	return h.Handler.Handle(ctx, r)
}

func cancelled(r slog.Record) bool {
	found := false
	r.Attrs(func(a slog.Attr) bool {
		if err, ok := a.Value.Any().(error); ok && errors.Is(err, context.Canceled) {
			found = true
			return false
		}
		return true
	})
	return found
}

// idleTimeout reports a record of a region client closed for a network timeout
// while its "client" attribute says no call was in flight.
func idleTimeout(r slog.Record) bool {
	timedOut, idle := false, false
	r.Attrs(func(a slog.Attr) bool {
		switch v := a.Value.Resolve().Any().(type) {
		case error:
			timedOut = timedOut || isTimeout(v)
		case json.Marshaler:
			if a.Key != "client" {
				break
			}
			b, err := v.MarshalJSON()
			if err != nil {
				break
			}
			var state struct{ InFlight *uint32 }
			if json.Unmarshal(b, &state) == nil && state.InFlight != nil && *state.InFlight == 0 {
				idle = true
			}
		}
		return true
	})
	return timedOut && idle
}

// isTimeout reports a network timeout. gohbase hands it over wrapped in
// region.ServerError, which embeds the error without Unwrap (so errors.As cannot
// see the net.Error), hence the look at the text os.ErrDeadlineExceeded ends with.
func isTimeout(err error) bool {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return true
	}
	return strings.HasSuffix(err.Error(), os.ErrDeadlineExceeded.Error())
}

func (h *benignAsDebug) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &benignAsDebug{h.Handler.WithAttrs(attrs)}
}

func (h *benignAsDebug) WithGroup(name string) slog.Handler {
	return &benignAsDebug{h.Handler.WithGroup(name)}
}
