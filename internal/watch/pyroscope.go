package watch

import (
	"context"
	"fmt"

	"github.com/heapscope/heapscope/internal/export/pyroscope"
	"github.com/heapscope/heapscope/internal/store"
	"github.com/heapscope/heapscope/internal/watch/config"
)

// pushToPyroscope pushes a committed capture to the config's Pyroscope
// server, when it has one. A push that fails is logged and counted
// (heapscope_watch_pyroscope_pushes_total{outcome="failed"}); the capture
// stays stored all the same.
func (w *Watcher) pushToPyroscope(ctx context.Context, t config.Target, e store.Entry) {
	p := w.opts.Config.Pyroscope
	if p == nil {
		return
	}
	dir, err := w.opts.Store.RunDir(ctx, e)
	var warnings []string
	if err == nil {
		warnings, err = exportTo(ctx, p, dir, t, e)
	}
	for _, warning := range warnings {
		w.log.Warn("pyroscope push: "+warning, "target", t.Key, "path", e.Path)
	}
	if err != nil {
		w.metrics.pyroscope.WithLabelValues("failed").Inc()
		if ctx.Err() == nil {
			w.log.Error("pyroscope push failed", "target", t.Key, "path", e.Path, "err", err)
		}
		return
	}
	w.metrics.pyroscope.WithLabelValues("ok").Inc()
	w.log.Debug("pushed to pyroscope", "target", t.Key, "path", e.Path)
}

// exportTo pushes the capture in dir with an Exporter made from p; the
// password file is read now, so that a rotated secret is taken up.
func exportTo(ctx context.Context, p *config.Pyroscope, dir string, t config.Target, e store.Entry) ([]string, error) {
	exp := &pyroscope.Exporter{URL: p.URL, TenantID: p.TenantID, Timeout: p.Timeout, Retries: p.Retries}
	if b := p.BasicAuth; b != nil {
		password, err := b.Password()
		if err != nil {
			return nil, fmt.Errorf("push to pyroscope %s: %w", p.URL, err)
		}
		exp.Username, exp.Password = b.Username, password
	}
	labels := e.Labels
	if labels == nil {
		labels = t.Labels
	}
	meta := pyroscope.Meta{Target: t.Key, Labels: labels, Kind: string(e.Kind), ID: e.Path}
	if e.Trigger != nil {
		meta.Trigger = e.Trigger.Expr
	}
	return exp.Export(ctx, dir, meta)
}
