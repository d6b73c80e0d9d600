package config

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/common/model"

	"github.com/heapscope/heapscope/internal/units"
)

// ParseDuration reads a duration as every duration of the config, the
// triggers and the command line is written (units.ParseDuration): 15m,
// 1h30m, 1.5s, 7d, 1w, 1y. Negative durations are errors.
func ParseDuration(s string) (time.Duration, error) {
	d, err := units.ParseDuration(s)
	if err != nil && !strings.HasPrefix(s, "-") {
		return 0, fmt.Errorf("bad duration %q (want e.g. 15m, 1h, 1d)", s)
	}
	return d, err
}

// ParseSize reads a size in bytes as every size of the config and the
// triggers is written (units.ParseSize): 64MiB, 1.5GiB, 512MB, 512Mi
// (case aside, a space allowed between), or a number of bytes.
func ParseSize(s string) (int64, error) { return units.ParseSize(s) }

// formatDuration writes d as the config would: 15m, 1d, 1h30m.
func formatDuration(d time.Duration) string {
	if d%time.Millisecond != 0 || d < 0 {
		return d.String()
	}
	return model.Duration(d).String()
}

// minWindow is the shortest capture window, as run.Config has it.
const minWindow = 100 * time.Millisecond

// settingChecks check each setting alone, after it is decoded or given:
// the decoder reports their errors at the key's line, ForURLs at its flag.
// pprof_path's also gives the path its slashes.
var settingChecks = map[string]func(s *Settings) error{
	"every":   func(s *Settings) error { return positive(s.Every) },
	"window":  func(s *Settings) error { return atLeast(s.Window, minWindow) },
	"timeout": func(s *Settings) error { return positive(s.Timeout) },
	"poll":    func(s *Settings) error { return positive(s.Poll) },
	"max_body": func(s *Settings) error {
		if s.MaxBody <= 0 {
			return fmt.Errorf("want more than 0 bytes, not %d", s.MaxBody)
		}
		return nil
	},
	"memory_limit": func(s *Settings) error {
		if s.MemoryLimit < 0 {
			return fmt.Errorf("%d is negative", s.MemoryLimit)
		}
		return nil
	},
	"profiles": func(s *Settings) error {
		if len(s.Profiles) == 0 {
			return fmt.Errorf("no profiles: name at least one of %s", strings.Join(Profiles, ", "))
		}
		for i, p := range s.Profiles {
			if err := checkProfile(p, s.Profiles[:i]); err != nil {
				return err
			}
		}
		return nil
	},
	"pprof_path": func(s *Settings) error {
		if err := checkPath(s.PprofPath); err != nil {
			return err
		}
		if !strings.HasSuffix(s.PprofPath, "/") {
			s.PprofPath += "/"
		}
		return nil
	},
	"metrics_path": func(s *Settings) error { return checkPath(s.MetricsPath) },
	"triggers": func(s *Settings) error {
		for _, t := range s.Triggers {
			if err := checkTrigger(t); err != nil {
				return fmt.Errorf("%q (%s): %w", t.Expr, t.Pos, err)
			}
		}
		return nil
	},
}

// checkSettings checks every setting of s, and the window against the
// period, naming keys with name. It gives pprof_path its slashes.
func checkSettings(s *Settings, name func(key string) string) error {
	for _, f := range settingsFields {
		if err := settingChecks[f.key](s); err != nil {
			return fmt.Errorf("%s: %w", name(f.key), err)
		}
	}
	if err := windowOrder(*s, "window"); err != nil {
		return fmt.Errorf("%s: %w", name("window"), err)
	}
	return nil
}

// windowOrder checks that the window is shorter than the period, saying
// so from key's side.
func windowOrder(s Settings, key string) error {
	if s.Window < s.Every {
		return nil
	}
	if key == "every" {
		return fmt.Errorf("%s is not longer than window (%s)", formatDuration(s.Every), formatDuration(s.Window))
	}
	return fmt.Errorf("%s is not shorter than every (%s)", formatDuration(s.Window), formatDuration(s.Every))
}

func positive(d time.Duration) error {
	if d < 0 {
		return fmt.Errorf("%s is negative", formatDuration(d))
	}
	if d == 0 {
		return errors.New("want more than 0")
	}
	return nil
}

func atLeast(d, least time.Duration) error {
	if d < 0 {
		return fmt.Errorf("%s is negative", formatDuration(d))
	}
	if d < least {
		return fmt.Errorf("%s is too short: want at least %s", formatDuration(d), formatDuration(least))
	}
	return nil
}

func checkConcurrency(n int) error {
	if n < 1 {
		return fmt.Errorf("%d: want at least 1 capture at a time", n)
	}
	return nil
}

// checkProfile checks a profile name and that before does not hold it.
func checkProfile(name string, before []string) error {
	if !slices.Contains(Profiles, name) {
		if alt := closest(name, Profiles); alt != "" {
			return fmt.Errorf("unknown profile %q (did you mean %s?)", name, alt)
		}
		return fmt.Errorf("unknown profile %q (want %s)", name, strings.Join(Profiles, ", "))
	}
	if slices.Contains(before, name) {
		return fmt.Errorf("profile %s is named twice", name)
	}
	return nil
}

// checkPath checks a URL path of the target: absolute, without query.
func checkPath(p string) error {
	bad := strings.ContainsFunc(p, func(r rune) bool { return r <= ' ' || r == 0x7f || r == '?' || r == '#' })
	if !strings.HasPrefix(p, "/") || bad {
		return fmt.Errorf("%q: want a path such as /debug/pprof/, starting with /", p)
	}
	return nil
}

// checkTrigger checks what a trigger must have whatever its expression.
func checkTrigger(t Trigger) error {
	if strings.TrimSpace(t.Expr) == "" {
		return errors.New("empty expression: give a condition such as memory>=80%")
	}
	if t.Cooldown < 0 {
		return fmt.Errorf("cooldown %s is negative", formatDuration(t.Cooldown))
	}
	return nil
}

var (
	labelName = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)
	groupName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)
	// sdPattern is Prometheus' rule for file_sd files: a glob in the last
	// element at most, and a JSON or YAML extension.
	sdPattern = regexp.MustCompile(`^[^*]*(\*[^/]*)?\.(json|yml|yaml|JSON|YML|YAML)$`)
)

// Labels heapscope gives every target itself.
const (
	LabelInstance = "instance"
	LabelGroup    = "group"
)

func checkLabelName(name string) error {
	switch {
	case name == LabelInstance || name == LabelGroup:
		return fmt.Errorf("label %s is heapscope's: every target has it", name)
	case strings.HasPrefix(name, "__"):
		return fmt.Errorf("label %s: names beginning with __ are reserved", plain(name))
	case !labelName.MatchString(name):
		return fmt.Errorf("label %q: want letters, digits and _, not starting with a digit", name)
	}
	return nil
}

func checkGroupName(name string) error {
	if !groupName.MatchString(name) {
		return fmt.Errorf("group name %q: want letters, digits, _, . and -, starting with a letter or digit", name)
	}
	return nil
}

func checkListen(addr string) error {
	if addr == "" {
		return nil
	}
	_, port, err := net.SplitHostPort(addr)
	if p, perr := strconv.ParseUint(port, 10, 16); err != nil || perr != nil || (p == 0 && port != "0") {
		return fmt.Errorf("%q: want host:port, such as 127.0.0.1:7071", addr)
	}
	return nil
}

func checkWebhookURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%q: want an http or https URL", raw)
	}
	return nil
}

// tenantID is what Pyroscope (as Cortex and Mimir) takes for a tenant:
// letters, digits and !-_.*'(), at most 150 of them.
var tenantID = regexp.MustCompile(`^[A-Za-z0-9!._*'()-]{1,150}$`)

func checkTenantID(s string) error {
	if !tenantID.MatchString(s) || s == "." || s == ".." {
		return fmt.Errorf("%q: want a tenant ID of letters, digits and !-_.*'(), at most 150", s)
	}
	return nil
}

// checkPasswordFile says whether the file can be read now; it is read
// again at each use.
func checkPasswordFile(path string) error {
	if path == "" {
		return errors.New("empty path: give the file that holds the password")
	}
	f, err := openRegular(path)
	if err != nil {
		return err
	}
	return f.Close()
}

func checkSDPattern(p string) error {
	if !sdPattern.MatchString(p) {
		return fmt.Errorf("%q: want a path or pattern (*) of .json, .yml or .yaml files", p)
	}
	if _, err := filepath.Match(p, ""); err != nil {
		return fmt.Errorf("%q: %w", p, err)
	}
	return nil
}

// parseTarget reads a target as written, a URL (http or https, a path
// prefix allowed) or host:port, into its base URL: lower-case scheme and
// host, the port always given, no trailing slash. pprofPath is the
// group's, which the URL must not hold already.
func parseTarget(raw, pprofPath string) (*url.URL, error) {
	if raw == "" || strings.TrimSpace(raw) != raw {
		return nil, fmt.Errorf("target %q: want a URL (http://host:port) or host:port", raw)
	}
	s := raw
	if !strings.Contains(s, "://") {
		if _, _, err := net.SplitHostPort(s); err != nil {
			return nil, fmt.Errorf("target %q: want a URL (http://host:port) or host:port", raw)
		}
		s = "http://" + s
	}
	u, err := url.Parse(s)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, fmt.Errorf("target %q: %w", raw, err)
	}
	scheme := strings.ToLower(u.Scheme)
	switch {
	case scheme != "http" && scheme != "https":
		return nil, fmt.Errorf("target %q: scheme must be http or https", raw)
	case u.Opaque != "" || u.Host == "":
		return nil, fmt.Errorf("target %q has no host", raw)
	case u.User != nil:
		return nil, fmt.Errorf("target %q: credentials in target URLs are not supported", raw)
	case u.RawQuery != "" || u.ForceQuery || u.Fragment != "":
		return nil, fmt.Errorf("target %q: give the service's base URL, without query or fragment", raw)
	}
	host, port := strings.ToLower(u.Hostname()), u.Port()
	if host == "" {
		return nil, fmt.Errorf("target %q has no host", raw)
	}
	if port == "" {
		port = "80"
		if scheme == "https" {
			port = "443"
		}
	}
	if p, err := strconv.ParseUint(port, 10, 16); err != nil || p == 0 {
		return nil, fmt.Errorf("target %q: bad port %q", raw, port)
	}
	base := &url.URL{Scheme: scheme, Host: net.JoinHostPort(host, port), Path: strings.TrimRight(u.Path, "/")}
	if pp := strings.TrimRight(pprofPath, "/"); pp != "" && strings.HasSuffix(base.Path, pp) {
		return nil, fmt.Errorf("target %q: give the service's base URL: the pprof path (%s) is added to it", raw, pprofPath)
	}
	return base, nil
}

// targetKey is a target's identity: its base URL and pprof path.
func targetKey(base *url.URL, pprofPath string) string {
	return base.String() + pprofPath
}

// Since reads a flag such as --since that gives a duration back from
// now, in ParseDuration's forms (24h, 7d): now less it; the zero time
// when s is empty. Errors name the flag.
func Since(flag, s string, now time.Time) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	d, err := ParseDuration(s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%s: %w", flag, err)
	}
	return now.Add(-d), nil
}

// namespaceName is a Kubernetes namespace's name: a DNS label.
var namespaceName = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`)

func checkNamespace(ns string) error {
	if !namespaceName.MatchString(ns) {
		return fmt.Errorf("namespace %q: want lower-case letters, digits and -, at most 63", ns)
	}
	return nil
}

// envRef is a $VAR or ${VAR} reference.
var envRef = regexp.MustCompile(`\$(\{[A-Za-z_][A-Za-z0-9_]*\}|[A-Za-z_][A-Za-z0-9_]*)`)

// expandEnv replaces $VAR and ${VAR} in s with the environment's values.
// A variable that is unset or empty is an error: a node name that
// silently became "" would watch every node's pods.
func expandEnv(s string) (string, error) {
	var missing []string
	out := envRef.ReplaceAllStringFunc(s, func(ref string) string {
		name := strings.Trim(ref, "${}")
		v := os.Getenv(name)
		if v == "" {
			missing = append(missing, "$"+name)
		}
		return v
	})
	if len(missing) > 0 {
		return "", fmt.Errorf("%s is not set in the environment (a DaemonSet sets NODE_NAME from spec.nodeName)", strings.Join(missing, ", "))
	}
	return out, nil
}
