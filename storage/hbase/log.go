package hbase

import (
	"context"
	"errors"
	"log/slog"
)

// gohbaseLogger is the logger handed to gohbase. gohbase logs at Error level every
// region lookup that ends because the region's context was cancelled, which is how
// it retires the regions of a dropped table or of a closed client; such records
// are lowered to Debug, everything else passes through.
func gohbaseLogger(l *slog.Logger) *slog.Logger {
	return slog.New(&cancelledAsDebug{l.Handler()}).With("component", "gohbase")
}

type cancelledAsDebug struct{ slog.Handler }

func (h *cancelledAsDebug) Enabled(ctx context.Context, level slog.Level) bool {
	// Decided in Handle, once the record's attributes are known.
	return h.Handler.Enabled(ctx, level) || level >= slog.LevelWarn
}

func (h *cancelledAsDebug) Handle(ctx context.Context, r slog.Record) error {
	if r.Level >= slog.LevelWarn && cancelled(r) {
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

func (h *cancelledAsDebug) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &cancelledAsDebug{h.Handler.WithAttrs(attrs)}
}

func (h *cancelledAsDebug) WithGroup(name string) slog.Handler {
	return &cancelledAsDebug{h.Handler.WithGroup(name)}
}
