package watch

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"
)

// Event is what a webhook receives when a trigger has captured a bundle, or
// when a target restarted after an OOM kill. Text is one line a chat
// service shows as is (Slack's incoming webhooks read "text").
type Event struct {
	Text   string            `json:"text"`
	Kind   string            `json:"kind"` // "bundle" or "restart"
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
}

// Webhook posts events as JSON to a URL, retrying on failure.
type Webhook struct {
	URL string
	// Timeout bounds one attempt (default 5 s); Retries is how many times
	// a failed attempt is tried again (default 3), after 1 s, 2 s, 4 s….
	Timeout time.Duration
	Retries int
	// Client replaces http.DefaultClient's transport (tests).
	Client *http.Client
	// backoff is the first wait between attempts (tests shorten it).
	backoff time.Duration
}

// maxWebhookReply is how much of a failed reply's body an error quotes.
const maxWebhookReply = 256

// Send posts ev, trying again with exponential backoff while the receiver
// fails with a network error, a 429 or a 5xx. Other replies are final.
func (w *Webhook) Send(ctx context.Context, ev Event) error {
	body, err := json.Marshal(ev)
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
		retry, err := w.post(ctx, client, timeout, body)
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
func (w *Webhook) post(ctx context.Context, client *http.Client, timeout time.Duration, body []byte) (retry bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.URL, bytes.NewReader(body))
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
