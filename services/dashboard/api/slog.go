package api

import (
	"context"
	"log/slog"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// zapHandler passes echo's slog records to zap, so the few lines echo logs
// itself come out in the service's format.
type zapHandler struct{ log *zap.Logger }

func newSlogLogger(log *zap.Logger) *slog.Logger { return slog.New(zapHandler{log: log}) }

func (h zapHandler) Enabled(_ context.Context, l slog.Level) bool {
	return h.log.Core().Enabled(zapLevel(l))
}

func (h zapHandler) Handle(_ context.Context, r slog.Record) error {
	fields := make([]zap.Field, 0, r.NumAttrs())
	r.Attrs(func(a slog.Attr) bool {
		fields = append(fields, zap.Any(a.Key, a.Value.Any()))
		return true
	})
	if ce := h.log.Check(zapLevel(r.Level), r.Message); ce != nil {
		ce.Write(fields...)
	}
	return nil
}

func (h zapHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	fields := make([]zap.Field, len(attrs))
	for i, a := range attrs {
		fields[i] = zap.Any(a.Key, a.Value.Any())
	}
	return zapHandler{log: h.log.With(fields...)}
}

func (h zapHandler) WithGroup(name string) slog.Handler {
	return zapHandler{log: h.log.With(zap.Namespace(name))}
}

func zapLevel(l slog.Level) zapcore.Level {
	switch {
	case l >= slog.LevelError:
		return zapcore.ErrorLevel
	case l >= slog.LevelWarn:
		return zapcore.WarnLevel
	case l >= slog.LevelInfo:
		return zapcore.InfoLevel
	default:
		return zapcore.DebugLevel
	}
}
