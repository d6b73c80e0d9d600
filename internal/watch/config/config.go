// Package config reads the configuration of heapscope watch: defaults for
// every target, groups of targets with labels, static targets and file_sd
// discovery in the style of Prometheus scrape configs, triggers as
// expressions, retention, a webhook and a Pyroscope server to push every
// capture to.
//
// Load reads a YAML file and rejects unknown keys and bad values with the
// file and line of each; ForURLs makes the same Config from a command
// line. Targets resolves the targets now, Watch again whenever a file_sd
// file changes. docs/watch-config.md documents every key and
// docs/watch-config.schema.json is the JSON Schema of the file.
package config

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/heapscope/heapscope/internal/target"
)

// Defaults of the keys a config may leave out.
const (
	DefaultEvery           = 15 * time.Minute
	DefaultWindow          = 30 * time.Second
	DefaultTimeout         = time.Minute
	DefaultPoll            = 5 * time.Second
	DefaultMaxBody         = target.DefaultMaxBody
	DefaultPprofPath       = target.DefaultPprofPath
	DefaultMetricsPath     = "/metrics"
	DefaultConcurrency     = 16
	DefaultMaxAge          = 30 * 24 * time.Hour
	DefaultCooldown        = 10 * time.Minute
	DefaultRefreshInterval = 30 * time.Second
	DefaultWebhookTimeout  = 5 * time.Second
	DefaultWebhookRetries  = 3
	// A push to Pyroscope carries a capture's profiles, megabytes: a
	// longer bound than a webhook's.
	DefaultPyroscopeTimeout = 30 * time.Second
	DefaultPyroscopeRetries = 3
)

// DefaultProfiles are the profiles captured unless a config names others:
// block and mutex are opt-in, since they cost the target to enable.
var DefaultProfiles = []string{"heap", "allocs", "goroutine", "cpu"}

// Profiles are the names a profiles list may hold.
var Profiles = []string{"heap", "allocs", "goroutine", "cpu", "block", "mutex"}

// Config is a whole watch configuration.
type Config struct {
	// Listen is the address of watch's own /metrics and /healthz (and the
	// history API); empty for none.
	Listen string
	// DebugPprof serves watch's own /debug/pprof/ at Listen.
	DebugPprof bool
	// Concurrency bounds the captures running at once across all targets.
	Concurrency int
	// Retention bounds what the store keeps.
	Retention Retention
	// Webhook is where trigger bundles are announced; nil for none.
	Webhook *Webhook
	// Pyroscope is the server every capture is pushed to; nil for none.
	Pyroscope *Pyroscope
	// Defaults are the settings of every group that does not override them.
	Defaults Settings
	// Groups are the target groups, in the file's order.
	Groups []Group
	// File is the path the config was read from; empty for ForURLs and
	// Default.
	File string

	opts Options
}

// Retention bounds the store: runs older than MaxAge, then the oldest
// runs past MaxSize bytes in all, are deleted. Zero means no bound.
type Retention struct {
	MaxAge  time.Duration
	MaxSize int64
}

// Webhook is the endpoint notified of each trigger bundle.
type Webhook struct {
	// URL is an http or https URL.
	URL string
	// Timeout bounds each attempt.
	Timeout time.Duration
	// Retries is how many times a failed notification is tried again.
	Retries int
	// Format is the body posted: FormatJSON (heapscope's event, with a
	// Slack-compatible text line) or FormatAlertmanager (Prometheus
	// Alertmanager's v2 alerts API, URL being its base).
	Format string
	// RepeatInterval is how often a problem still open is said again.
	RepeatInterval time.Duration
	// ExternalURL is where heapscope server (or watch --listen) is
	// reached: events link their target's page under it. Empty: no link.
	ExternalURL string
}

// The webhook's formats.
const (
	FormatJSON         = "json"
	FormatAlertmanager = "alertmanager"
)

// DefaultRepeatInterval is how often a problem still open is said again
// by default: as Alertmanager's repeat_interval.
const DefaultRepeatInterval = 4 * time.Hour

// Pyroscope is the Grafana Pyroscope server every stored capture is pushed
// to.
type Pyroscope struct {
	// URL is the server's base URL, http or https.
	URL string
	// BasicAuth is sent with each push; nil for none.
	BasicAuth *BasicAuth
	// TenantID is sent as X-Scope-OrgID; empty for none.
	TenantID string
	// Timeout bounds each attempt.
	Timeout time.Duration
	// Retries is how many times a failed push is tried again.
	Retries int
}

// BasicAuth is HTTP basic auth with the password in a file, as a mounted
// secret: Password reads it at each use, so a rotated secret is taken up.
type BasicAuth struct {
	Username string
	// PasswordFile is an absolute path (a relative one in the config is
	// read from the config file's directory).
	PasswordFile string
}

// maxPasswordFile bounds a password file.
const maxPasswordFile = 64 << 10

// Password reads the password file: its content less leading and
// trailing white space (a final newline), as Prometheus reads one.
func (b *BasicAuth) Password() (string, error) {
	f, err := openRegular(b.PasswordFile)
	if err != nil {
		return "", fmt.Errorf("read basic auth password: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxPasswordFile+1))
	switch {
	case err != nil:
		return "", fmt.Errorf("read basic auth password %s: %w", b.PasswordFile, err)
	case len(data) > maxPasswordFile:
		return "", fmt.Errorf("read basic auth password %s: over %d KiB", b.PasswordFile, maxPasswordFile>>10)
	}
	return strings.TrimSpace(string(data)), nil
}

// Settings are what every target of a group is watched with.
type Settings struct {
	// Every is the period of scheduled captures.
	Every time.Duration
	// Window is how long a capture observes the target (allocations and
	// CPU over the window); always shorter than Every.
	Window time.Duration
	// Timeout bounds each request to a target, and one capture beyond
	// its window.
	Timeout time.Duration
	// Poll is how often triggers sample the target.
	Poll time.Duration
	// MaxBody is the largest response body accepted from the target.
	MaxBody int64
	// Profiles are the profiles captured, among Profiles.
	Profiles []string
	// PprofPath is where the target serves pprof, with a leading and a
	// trailing slash.
	PprofPath string
	// MetricsPath is where the target serves Prometheus metrics.
	MetricsPath string
	// MemoryLimit is the memory limit in bytes that memory triggers of a
	// remote target measure against; local targets read their cgroup's.
	// Zero when not given.
	MemoryLimit int64
	// Triggers fire captures between the scheduled ones.
	Triggers []Trigger
}

// Trigger is one trigger of a group, as written: the trigger package
// interprets Expr and Hysteresis.
type Trigger struct {
	// Expr is the condition, such as memory>=80%.
	Expr string
	// Hysteresis is how far the value must fall back before the trigger
	// re-arms, as written (5%, 100MiB, 1000); empty for the trigger
	// package's default.
	Hysteresis string
	// Cooldown is the least time between two captures of this trigger, 0
	// for none; DefaultCooldown when the config does not say.
	Cooldown time.Duration
	// Pos is where the trigger was written, file:line, for the errors
	// found later.
	Pos string
}

// Group is a group of targets sharing labels and settings.
type Group struct {
	// Name names the group, unique in the config; targets carry it as
	// their group label.
	Name string
	// Labels are given to every target of the group.
	Labels map[string]string
	// Settings are the group's own, resolved: Defaults overridden by the
	// keys the group gives. A group's triggers replace the default list.
	Settings Settings
	// Static are the targets written in the config.
	Static []Static
	// FileSD are the files of targets re-read while watching.
	FileSD []FileSD
	// Kubernetes discovers the group's targets among a cluster's pods;
	// nil for none.
	Kubernetes *Kubernetes
	// Pos is where the group was written, file:line.
	Pos string
}

// Static is one static entry of a group: targets with labels.
type Static struct {
	// Targets are URLs (http://host:port, https://host:port/prefix) or
	// host:port, which is http.
	Targets []string
	// Labels are given to these targets, over the group's.
	Labels map[string]string
	// PID is the process of these targets when the command line gives it
	// (--pid); never set by a config file.
	PID int

	pos []string // where each target was written, when loaded
}

// FileSD is one file_sd entry of a group: files in the Prometheus file_sd
// format, a JSON or YAML list of {targets: [host:port…], labels: {…}}.
type FileSD struct {
	// Files are paths or patterns (filepath.Match) of .json, .yml or .yaml
	// files, relative ones resolved against the config file's directory.
	Files []string
	// RefreshInterval is how often the files are read again.
	RefreshInterval time.Duration
}

// Kubernetes is a group's pod discovery: the running pods that opt in
// with the heapscope.io/* annotations (docs/watch-config.md), watched
// through the Kubernetes API.
type Kubernetes struct {
	// Namespaces are the namespaces whose pods are watched; empty for all.
	Namespaces []string
	// Selector is a label selector, in kubectl's syntax, that the pods
	// must match; empty for every pod.
	Selector string
	// Node, when set, restricts discovery to the pods of that node (a
	// watcher run as a DaemonSet). $VAR and ${VAR} in it are taken from
	// the environment when the config is read.
	Node string
	// CgroupRoot is where the node's cgroup filesystem is mounted
	// (/host/sys/fs/cgroup in the DaemonSet). When set, each pod's memory,
	// limit and OOM kills are read from its container's cgroup there, as
	// a local process's are; empty reads none.
	CgroupRoot string
	// Kubeconfig is the kubeconfig file to reach the API server with;
	// empty for the pod's service account in a cluster, else $KUBECONFIG
	// or ~/.kube/config.
	Kubeconfig string
	// Pos is where the section was written, file:line.
	Pos string
}

// Pod is one pod a kubernetes section found: what a PodDiscovery hands
// to Watch.
type Pod struct {
	// URL is the pod's pprof server, http://<pod IP>:<port>.
	URL string
	// PprofPath is the pod's pprof path (its heapscope.io/path
	// annotation); empty for the group's pprof_path.
	PprofPath string
	// Labels name the pod: namespace, pod, container, node, owner_kind,
	// owner.
	Labels map[string]string
	// MemoryLimit is the container's memory limit from the pod spec in
	// bytes, 0 when it has none (the group's memory_limit applies).
	MemoryLimit int64
	// Status is what changes while the pod stays the same target.
	Status PodStatus
}

// PodStatus is what changes in a pod's container without making it
// another target: its restarts and where its cgroup is.
type PodStatus struct {
	// Restarts is the container's restart count.
	Restarts int32
	// LastTermination is the kubelet's reason for the end of the
	// container's previous run (OOMKilled, Error, …); empty when it has
	// not restarted.
	LastTermination string
	// LastFinishedAt is when that run ended.
	LastFinishedAt time.Time
	// CgroupMount is the mount of the memory hierarchy that holds Cgroup
	// (the host's cgroup root for v2, its memory controller for v1);
	// Cgroup is the container's cgroup directory under it. Both are empty
	// when the section reads no cgroups, or before the container has one.
	CgroupMount, Cgroup string
}

// OOMKilled reports whether the container's previous run ended in the
// kernel's OOM killer.
func (s PodStatus) OOMKilled() bool { return s.LastTermination == "OOMKilled" }

// PodDiscovery finds the pods of kubernetes sections. heapscope's own,
// in internal/watch/kubesd, reaches the API server through client-go;
// keeping it behind this interface keeps client-go out of every package
// that only reads configs.
type PodDiscovery interface {
	// Check checks a section's values when the config is read (a label
	// selector's syntax); its error is reported at the section's line.
	Check(k *Kubernetes) error
	// Watch calls fn with the section's pods once its view of the cluster
	// is complete, then whenever they change, one call at a time, until
	// ctx ends; then it returns nil. It returns an error at once when the
	// API server cannot be reached with the section's settings (no
	// service account, no kubeconfig).
	Watch(ctx context.Context, k *Kubernetes, fn func([]Pod)) error
}

// Target is one target to watch, resolved from its group and entry.
type Target struct {
	// Key is the target's identity: its canonical pprof URL,
	// scheme://host:port[/prefix]/debug/pprof/, the same however it was
	// written.
	Key string
	// URL is the target's base URL (scheme://host:port[/prefix]), what
	// target.Options.BaseURL takes; Settings.PprofPath goes below it.
	URL *url.URL
	// Group is the name of the target's group.
	Group string
	// Labels are the group's labels, then the entry's, then instance
	// (host:port) and group.
	Labels map[string]string
	// Settings are the group's.
	Settings Settings
	// PID is the target's process when given (Static.PID); 0 otherwise.
	PID int
	// Pod is the status of the pod a kubernetes section found the target
	// as; nil for other targets. Its changes leave the target the same.
	Pod *PodStatus

	pos string // where it was written, for duplicate errors
}

// Options are what Load needs from its caller.
type Options struct {
	// CheckTrigger parses a trigger expression (the trigger package's
	// parser); its error is reported at the expression's file:line. Nil:
	// expressions are not checked.
	CheckTrigger func(expr string) error
	// Pods discovers the pods of kubernetes sections; a config with one
	// cannot be loaded without it.
	Pods PodDiscovery
	// Warn is told of each problem of target discovery that does not stop
	// Targets or Watch: a file_sd file that cannot be read or parsed (its
	// last good targets are kept), a target given twice (the first is
	// kept). Nil: slog.Default's Warn.
	Warn func(error)
}

// Default returns the configuration of every default, with no group.
func Default() *Config {
	return &Config{
		Concurrency: DefaultConcurrency,
		Retention:   Retention{MaxAge: DefaultMaxAge},
		Defaults:    defaultSettings(),
	}
}

func defaultSettings() Settings {
	return Settings{
		Every:       DefaultEvery,
		Window:      DefaultWindow,
		Timeout:     DefaultTimeout,
		Poll:        DefaultPoll,
		MaxBody:     DefaultMaxBody,
		Profiles:    slices.Clone(DefaultProfiles),
		PprofPath:   DefaultPprofPath,
		MetricsPath: DefaultMetricsPath,
	}
}

// CLIGroup is the name of the one group ForURLs makes.
const CLIGroup = "cli"

// ForURLs returns the configuration of the command line's form, heapscope
// watch URL… --every … --trigger …: the defaults, and one group "cli"
// whose settings are s, with its zero fields taken from the defaults, and
// whose static targets are urls. Trigger expressions are not checked here
// (the caller parses them); a trigger without Pos gets "command line",
// one without Cooldown DefaultCooldown.
// Errors name the keys as flags: --every, --max-body.
func ForURLs(urls []string, s Settings) (*Config, error) {
	c := Default()
	d := defaultSettings()
	if s.Every == 0 {
		s.Every = d.Every
	}
	if s.Window == 0 {
		s.Window = d.Window
	}
	if s.Timeout == 0 {
		s.Timeout = d.Timeout
	}
	if s.Poll == 0 {
		s.Poll = d.Poll
	}
	if s.MaxBody == 0 {
		s.MaxBody = d.MaxBody
	}
	if s.Profiles == nil {
		s.Profiles = d.Profiles
	}
	s.Profiles = slices.Clone(s.Profiles)
	if s.PprofPath == "" {
		s.PprofPath = d.PprofPath
	}
	if s.MetricsPath == "" {
		s.MetricsPath = d.MetricsPath
	}
	s.Triggers = slices.Clone(s.Triggers)
	for i := range s.Triggers {
		if s.Triggers[i].Pos == "" {
			s.Triggers[i].Pos = "command line"
		}
		if s.Triggers[i].Cooldown == 0 {
			s.Triggers[i].Cooldown = DefaultCooldown
		}
	}
	if err := checkSettings(&s, flagName); err != nil {
		return nil, err
	}
	if len(urls) == 0 {
		return nil, errors.New("no target: give the URL of at least one service, such as http://127.0.0.1:6060")
	}
	g := Group{Name: CLIGroup, Labels: map[string]string{}, Settings: s, Static: []Static{{Targets: slices.Clone(urls)}}}
	seen := map[string]string{}
	for _, raw := range urls {
		u, err := parseTarget(raw, s.PprofPath)
		if err != nil {
			return nil, err
		}
		key := targetKey(u, s.PprofPath)
		if first, ok := seen[key]; ok {
			return nil, fmt.Errorf("target %s is given twice (%s and %s)", key, first, raw)
		}
		seen[key] = raw
	}
	c.Groups = []Group{g}
	return c, nil
}

// flagName names a key as the command line's flag: max_body is
// --max-body, triggers --trigger.
func flagName(key string) string {
	if key == "triggers" {
		return "--trigger"
	}
	b := []byte(key)
	for i, c := range b {
		if c == '_' {
			b[i] = '-'
		}
	}
	return "--" + string(b)
}

// warn reports a discovery problem through Options.Warn.
func (c *Config) warn(err error) {
	if c.opts.Warn != nil {
		c.opts.Warn(err)
		return
	}
	slog.Default().Warn("watch config: " + err.Error())
}
