package watch

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/heapscope/heapscope/internal/problem"
	"github.com/heapscope/heapscope/internal/watch/config"
)

// Event is what a webhook receives when a trigger has captured a bundle,
// when a target restarted (after an OOM kill or not), went down or came
// back, and when one of its problems opened, escalated or resolved. Text is one line a chat
// service shows as is (Slack's incoming webhooks read "text").
type Event struct {
	Text   string            `json:"text"`
	Kind   string            `json:"kind"` // bundle, restart, problem, down or up
	Target string            `json:"target"`
	Labels map[string]string `json:"labels,omitempty"`
	Time   time.Time         `json:"time"`
	// Trigger is the expression that crossed and the value it crossed
	// with, for a bundle.
	Trigger        string  `json:"trigger,omitempty"`
	Value          float64 `json:"value,omitempty"`
	Threshold      float64 `json:"threshold,omitempty"`
	Path           string  `json:"path,omitempty"`
	CaptureSeconds float64 `json:"capture_seconds,omitempty"`
	// Findings are the bundle's leading findings, one line each.
	Findings []string `json:"findings,omitempty"`
	OOMKill  bool     `json:"oom_kill,omitempty"`
	// Change and Problem, for a problem event: what happened to it
	// (opened, placed — given the service's line after it was opened
	// without one —, reopened, escalated, resolved, still open) and the
	// problem.
	Change  string           `json:"change,omitempty"`
	Problem *problem.Problem `json:"problem,omitempty"`
	// Link is the target's page, when the webhook has an external URL.
	Link string `json:"link,omitempty"`
}

// Webhook posts events as JSON to a URL, retrying on failure.
type Webhook struct {
	URL string
	// Timeout bounds one attempt (default 5 s); Retries is how many times
	// a failed attempt is tried again (default 3), after 1 s, 2 s, 4 s….
	Timeout time.Duration
	Retries int
	// Format is the body: config.FormatJSON (the Event) or
	// config.FormatAlertmanager (alerts to URL's /api/v2/alerts, firing
	// for Hold unless resolved, as Alertmanager's API takes them).
	Format string
	Hold   time.Duration
	// Client replaces http.DefaultClient's transport (tests).
	Client *http.Client
	// backoff is the first wait between attempts (tests shorten it).
	backoff time.Duration
}

// alert is one alert of Alertmanager's v2 API (POST /api/v2/alerts).
type alert struct {
	Labels       map[string]string `json:"labels"`
	Annotations  map[string]string `json:"annotations,omitempty"`
	StartsAt     time.Time         `json:"startsAt,omitzero"`
	EndsAt       time.Time         `json:"endsAt,omitzero"`
	GeneratorURL string            `json:"generatorURL,omitempty"`
}

// alertOf is an event as an alert: named by its kind (HeapscopeProblem,
// HeapscopeTrigger, HeapscopeOOMKill, HeapscopeRestart,
// HeapscopeTargetDown), labelled with the target's labels, firing for
// hold after the event unless it ends something (a problem resolved, a
// target back up), then resolved at once: Alertmanager routes, groups and
// repeats them as it does every alert.
func alertOf(ev Event, hold time.Duration) alert {
	a := alert{Labels: map[string]string{}, Annotations: map[string]string{"summary": ev.Text},
		StartsAt: ev.Time, EndsAt: ev.Time.Add(hold), GeneratorURL: ev.Link}
	for k, v := range ev.Labels {
		a.Labels[k] = v
	}
	a.Labels["target"] = ev.Target
	switch ev.Kind {
	case "problem":
		p := ev.Problem
		a.Labels["alertname"] = "HeapscopeProblem"
		a.Labels["severity"], a.Labels["kind"], a.Labels["cause"] = p.Severity, p.Kind, p.Cause
		a.Annotations["title"], a.Annotations["where"] = p.Title, p.Where
		a.StartsAt = p.FirstSeen
		if ev.Change == "resolved" {
			a.EndsAt = ev.Time
		}
	case "bundle":
		a.Labels["alertname"], a.Labels["trigger"] = "HeapscopeTrigger", ev.Trigger
		a.Annotations["bundle"] = ev.Path
		a.EndsAt = ev.Time.Add(time.Hour) // a moment, not a state
	case "restart":
		a.Labels["alertname"] = "HeapscopeRestart"
		if ev.OOMKill {
			a.Labels["alertname"] = "HeapscopeOOMKill"
		}
		a.EndsAt = ev.Time.Add(time.Hour)
	case "down":
		a.Labels["alertname"] = "HeapscopeTargetDown"
	case "up":
		a.Labels["alertname"] = "HeapscopeTargetDown"
		a.EndsAt = ev.Time
	}
	return a
}

// maxWebhookReply is how much of a failed reply's body an error quotes.
const maxWebhookReply = 256

// Send posts ev, trying again with exponential backoff while the receiver
// fails with a network error, a 429 or a 5xx. Other replies are final.
func (w *Webhook) Send(ctx context.Context, ev Event) error {
	var body []byte
	var err error
	to := w.URL
	if w.Format == config.FormatAlertmanager {
		to = strings.TrimSuffix(w.URL, "/") + "/api/v2/alerts"
		body, err = json.Marshal([]alert{alertOf(ev, w.Hold)})
	} else {
		body, err = json.Marshal(ev)
	}
	if err != nil {
		return fmt.Errorf("webhook: encode event: %w", err)
	}
	timeout, retries, wait := w.Timeout, w.Retries, w.backoff
	if timeout <= 0 {
		timeout = 5 * time.Second
	}
	if retries < 0 {
		retries = 0
	}
	if wait <= 0 {
		wait = time.Second
	}
	client := w.Client
	if client == nil {
		client = &http.Client{}
	}
	for attempt := 0; ; attempt++ {
		retry, err := w.post(ctx, client, timeout, to, body)
		if err == nil {
			return nil
		}
		if !retry || attempt >= retries {
			return fmt.Errorf("webhook %s: %w (after %d attempts)", w.URL, err, attempt+1)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("webhook %s: %w", w.URL, ctx.Err())
		case <-time.After(wait):
		}
		wait *= 2
	}
}

// post makes one attempt and says whether a failure is worth retrying.
func (w *Webhook) post(ctx context.Context, client *http.Client, timeout time.Duration, to string, body []byte) (retry bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, to, bytes.NewReader(body))
	if err != nil {
		return false, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "heapscope-watch")
	resp, err := client.Do(req)
	if err != nil {
		return !errors.Is(err, context.Canceled), err
	}
	defer resp.Body.Close()
	reply, _ := io.ReadAll(io.LimitReader(resp.Body, maxWebhookReply))
	if resp.StatusCode/100 == 2 {
		return false, nil
	}
	err = fmt.Errorf("%s: %q", resp.Status, bytes.TrimSpace(reply))
	return resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500, err
}

// outboxDepth is how many events wait per target for the webhook; a full
// queue drops its oldest event.
const outboxDepth = 16

// outboxDrain bounds how long watch, stopping, waits for the events it
// still holds to be delivered: short enough that watch ends within 5 s of
// SIGTERM when a receiver hangs.
const outboxDrain = 3 * time.Second

// outbox delivers events to the webhook beside the triggers: a hung or
// failing receiver holds no bundle and no sample. Each target has a
// bounded queue, delivered in order by one goroutine while it has
// events; deliveries run under a context of their own, so the watch
// stopping does not cut one in flight (drain waits for them, up to a
// deadline).
type outbox struct {
	hook     *Webhook
	log      *slog.Logger
	outcomes *prometheus.CounterVec // outcome: delivered, failed, dropped

	ctx    context.Context // the deliveries'
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu     sync.Mutex
	queues map[string][]Event // by target, waiting
	busy   map[string]bool    // a target's delivery goroutine runs
	closed bool
}

func newOutbox(hook *Webhook, log *slog.Logger, outcomes *prometheus.CounterVec) *outbox {
	ctx, cancel := context.WithCancel(context.Background())
	return &outbox{hook: hook, log: log, outcomes: outcomes, ctx: ctx, cancel: cancel,
		queues: map[string][]Event{}, busy: map[string]bool{}}
}

// post queues ev for delivery and returns at once.
func (o *outbox) post(ev Event) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed {
		o.drop(ev, "watch is stopping")
		return
	}
	q := o.queues[ev.Target]
	if len(q) >= outboxDepth {
		o.drop(q[0], "its target's queue is full")
		q = q[1:]
	}
	o.queues[ev.Target] = append(q, ev)
	if !o.busy[ev.Target] {
		o.busy[ev.Target] = true
		o.wg.Go(func() { o.deliver(ev.Target) })
	}
}

// drop counts and logs an event not delivered (o.mu held).
func (o *outbox) drop(ev Event, why string) {
	o.outcomes.WithLabelValues("dropped").Inc()
	o.log.Warn("webhook event dropped: "+why, "target", ev.Target, "kind", ev.Kind, "time", ev.Time)
}

// deliver sends a target's events in order until its queue is empty.
func (o *outbox) deliver(target string) {
	for {
		o.mu.Lock()
		q := o.queues[target]
		if len(q) == 0 {
			delete(o.queues, target)
			delete(o.busy, target)
			o.mu.Unlock()
			return
		}
		ev := q[0]
		o.queues[target] = q[1:]
		o.mu.Unlock()
		if err := o.hook.Send(o.ctx, ev); err != nil {
			o.outcomes.WithLabelValues("failed").Inc()
			o.log.Error("webhook", "target", target, "kind", ev.Kind, "err", err)
			continue
		}
		o.outcomes.WithLabelValues("delivered").Inc()
	}
}

// drain stops taking events and waits up to timeout for those queued or
// in flight; past it, the deliveries are cut and what was left is
// counted as dropped.
func (o *outbox) drain(timeout time.Duration) {
	o.mu.Lock()
	o.closed = true
	o.mu.Unlock()
	done := make(chan struct{})
	go func() { o.wg.Wait(); close(done) }()
	select {
	case <-done:
		o.cancel()
		return
	case <-time.After(timeout):
	}
	o.mu.Lock()
	left := 0
	for target, q := range o.queues {
		left += len(q)
		for _, ev := range q {
			o.drop(ev, "not delivered before watch stopped")
		}
		o.queues[target] = nil
	}
	o.mu.Unlock()
	o.cancel()
	<-done
	o.log.Warn("webhook deliveries cut at shutdown", "waited", timeout, "queued_dropped", left)
}
