package config

import (
	"slices"
	"testing"
	"time"
)

func TestFromCommandLine_Bad(t *testing.T) {
	urls := []string{"127.0.0.1:6060"}
	tests := []struct {
		name string
		cl   CommandLine
		want string
	}{
		{"no targets", CommandLine{}, "watch needs targets: URLs, or --config FILE"},
		{"file and URLs", CommandLine{File: "heapscope.yaml", URLs: urls}, "give the targets in --config or as URLs, not both"},
		{"URL flag with a file", CommandLine{File: "heapscope.yaml", Given: func(f string) bool { return f == "webhook" }},
			"--webhook goes with URLs; with --config set it in the file"},
		{"pid of two", CommandLine{URLs: []string{"127.0.0.1:6060", "127.0.0.1:6061"}, PID: 7}, "--pid names one process: give one URL, not 2"},
		{"webhook a file", CommandLine{URLs: urls, Webhook: "file:///etc/passwd"}, `--webhook "file:///etc/passwd": want an http or https URL`},
		{"webhook without a host", CommandLine{URLs: urls, Webhook: "http:///hook"}, `--webhook "http:///hook": want an http or https URL`},
		{"concurrency 0", CommandLine{URLs: urls, Concurrency: 0, Given: func(f string) bool { return f == "concurrency" }},
			"--concurrency 0: give at least 1"},
		{"timeout 0", CommandLine{URLs: urls, Given: func(f string) bool { return f == "timeout" }},
			"--timeout 0s: give a positive duration"},
		{"timeout with a file", CommandLine{File: "heapscope.yaml", Timeout: time.Second, Given: func(f string) bool { return f == "timeout" }},
			"--timeout goes with URLs; with --config set it in the file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.cl.Every, tt.cl.Window = 15*time.Minute, 30*time.Second
			cfg, err := FromCommandLine(tt.cl)
			if err == nil || err.Error() != tt.want {
				t.Errorf("FromCommandLine = %v, %v; want the error %q", cfg, err, tt.want)
			}
		})
	}
}

func TestFromCommandLine_Webhook(t *testing.T) {
	cfg, err := FromCommandLine(CommandLine{URLs: []string{"127.0.0.1:6060"}, Every: time.Minute, Window: 10 * time.Second,
		Webhook: "https://hooks.example/heapscope", Triggers: []string{"memory>=80%"}})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Webhook == nil || cfg.Webhook.URL != "https://hooks.example/heapscope" || cfg.Webhook.Timeout != DefaultWebhookTimeout {
		t.Errorf("webhook %+v: want the flag's URL with the default timeout", cfg.Webhook)
	}
	if got := cfg.Groups[0].Settings.Triggers; len(got) != 1 || got[0].Expr != "memory>=80%" {
		t.Errorf("triggers %+v, want the flag's", got)
	}
	if !slices.Equal(keys(mustTargets(t, cfg)), []string{"127.0.0.1:6060"}) {
		t.Error("want the one URL as the target")
	}
}

func TestFromCommandLine_Timeout(t *testing.T) {
	tests := []struct {
		name  string
		given bool
		want  time.Duration
	}{
		{"the default", false, DefaultTimeout},
		{"the flag's", true, 5 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := FromCommandLine(CommandLine{URLs: []string{"127.0.0.1:6060"}, Every: time.Minute, Window: 10 * time.Second,
				Timeout: 5 * time.Second, Given: func(f string) bool { return tt.given && f == "timeout" }})
			if err != nil {
				t.Fatal(err)
			}
			for _, tg := range mustTargets(t, cfg) {
				if tg.Settings.Timeout != tt.want {
					t.Errorf("%s: timeout %s, want %s", tg.Key, tg.Settings.Timeout, tt.want)
				}
			}
		})
	}
}

func mustTargets(t *testing.T, c *Config) []Target {
	t.Helper()
	ts, err := c.Targets(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return ts
}
