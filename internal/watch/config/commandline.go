package config

import (
	"errors"
	"fmt"
	"time"
)

// CommandLine is what heapscope watch's command line says: a config file,
// or URLs with the settings of its flags. The two forms do not mix: a flag
// that sets what a config file sets belongs to the URL form.
type CommandLine struct {
	// File is --config.
	File string
	// URLs are the targets of the URL form.
	URLs                   []string
	Every, Window, Timeout time.Duration
	Triggers               []string
	Webhook                string
	PID                    int
	Concurrency            int
	// Given reports whether a flag was given on the command line, by its
	// name (every, window, timeout, trigger, webhook, pid, concurrency).
	Given func(flag string) bool
	// CheckTrigger checks a trigger expression, as Options.CheckTrigger.
	CheckTrigger func(expr string) error
	// Pods discovers the pods of a config file's kubernetes sections, as
	// Options.Pods.
	Pods PodDiscovery
	// Warn is told of discovery's problems, as Options.Warn.
	Warn func(error)
}

// urlFormFlags are the flags of the URL form.
var urlFormFlags = []string{"every", "window", "timeout", "trigger", "webhook", "pid", "concurrency"}

// FromCommandLine returns the configuration a watch command line gives:
// the file's (Load), or that of the URLs and their flags (ForURLs). Errors
// name the flags.
func FromCommandLine(cl CommandLine) (*Config, error) {
	given := cl.Given
	if given == nil {
		given = func(string) bool { return false }
	}
	if cl.File != "" {
		if len(cl.URLs) > 0 {
			return nil, errors.New("give the targets in --config or as URLs, not both")
		}
		for _, name := range urlFormFlags {
			if given(name) {
				return nil, fmt.Errorf("--%s goes with URLs; with --config set it in the file", name)
			}
		}
		return Load(cl.File, Options{CheckTrigger: cl.CheckTrigger, Pods: cl.Pods, Warn: cl.Warn})
	}
	if len(cl.URLs) == 0 {
		return nil, errors.New("watch needs targets: URLs, or --config FILE")
	}
	if cl.PID != 0 && len(cl.URLs) != 1 {
		return nil, fmt.Errorf("--pid names one process: give one URL, not %d", len(cl.URLs))
	}
	s := Default().Defaults
	s.Every, s.Window = cl.Every, cl.Window
	if given("timeout") {
		if cl.Timeout <= 0 {
			return nil, fmt.Errorf("--timeout %s: give a positive duration", cl.Timeout)
		}
		s.Timeout = cl.Timeout
	}
	for _, expr := range cl.Triggers {
		if cl.CheckTrigger != nil {
			if err := cl.CheckTrigger(expr); err != nil {
				return nil, fmt.Errorf("--trigger: %w", err)
			}
		}
		s.Triggers = append(s.Triggers, Trigger{Expr: expr, Pos: "--trigger"})
	}
	cfg, err := ForURLs(cl.URLs, s)
	if err != nil {
		return nil, err
	}
	if cl.Webhook != "" {
		if err := checkWebhookURL(cl.Webhook); err != nil {
			return nil, fmt.Errorf("--webhook %w", err)
		}
		cfg.Webhook = &Webhook{URL: cl.Webhook, Timeout: DefaultWebhookTimeout, Retries: DefaultWebhookRetries,
			Format: FormatJSON, RepeatInterval: DefaultRepeatInterval}
	}
	if given("concurrency") {
		if cl.Concurrency < 1 {
			return nil, fmt.Errorf("--concurrency %d: give at least 1", cl.Concurrency)
		}
		cfg.Concurrency = cl.Concurrency
	}
	cfg.Groups[0].Static[0].PID = cl.PID
	return cfg, nil
}
