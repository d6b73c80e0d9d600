package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/heapscope/heapscope/internal/goldenfile"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// resolved is what a golden file shows of a config: the settings that are
// not per group, and every target resolved.
type resolved struct {
	Listen      string
	Concurrency int
	Retention   struct{ MaxAge, MaxSize string }
	Webhook     *webhookView
	Pyroscope   *pyroscopeView
	Groups      []string
	Targets     []targetView
	Problems    []string
}

type webhookView struct {
	URL, Timeout string
	Retries      int
}

type pyroscopeView struct {
	URL, TenantID, Timeout string
	Retries                int
	Username, PasswordFile string `json:",omitempty"`
}

type targetView struct {
	Key, URL, Group string
	Labels          map[string]string
	Settings        settingsView
}

type settingsView struct {
	Every, Window, Timeout, Poll, MaxBody, MemoryLimit string
	Profiles                                           []string
	PprofPath, MetricsPath                             string
	Triggers                                           []triggerView
}

type triggerView struct{ Expr, Hysteresis, Cooldown, Pos string }

func viewSettings(s Settings) settingsView {
	triggers := []triggerView{}
	for _, t := range s.Triggers {
		triggers = append(triggers, triggerView{t.Expr, t.Hysteresis, formatDuration(t.Cooldown), t.Pos})
	}
	return settingsView{
		Every: formatDuration(s.Every), Window: formatDuration(s.Window), Timeout: formatDuration(s.Timeout),
		Poll: formatDuration(s.Poll), MaxBody: sizeString(s.MaxBody), MemoryLimit: sizeString(s.MemoryLimit),
		Profiles: s.Profiles, PprofPath: s.PprofPath, MetricsPath: s.MetricsPath, Triggers: triggers,
	}
}

func sizeString(n int64) string { return strconv.FormatInt(n, 10) }

func viewOf(t *testing.T, c *Config) []byte {
	t.Helper()
	v := resolved{Listen: c.Listen, Concurrency: c.Concurrency}
	if w := c.Webhook; w != nil {
		v.Webhook = &webhookView{w.URL, formatDuration(w.Timeout), w.Retries}
	}
	if p := c.Pyroscope; p != nil {
		v.Pyroscope = &pyroscopeView{URL: p.URL, TenantID: p.TenantID, Timeout: formatDuration(p.Timeout), Retries: p.Retries}
		if b := p.BasicAuth; b != nil {
			v.Pyroscope.Username, v.Pyroscope.PasswordFile = b.Username, filepath.ToSlash(b.PasswordFile)
		}
	}
	v.Retention.MaxAge, v.Retention.MaxSize = formatDuration(c.Retention.MaxAge), sizeString(c.Retention.MaxSize)
	for _, g := range c.Groups {
		v.Groups = append(v.Groups, g.Name)
	}
	ts, err := c.Targets(t.Context())
	for _, e := range unjoin(err) {
		v.Problems = append(v.Problems, e.Error())
	}
	for _, tg := range ts {
		v.Targets = append(v.Targets, targetView{Key: tg.Key, URL: tg.URL.String(), Group: tg.Group, Labels: tg.Labels, Settings: viewSettings(tg.Settings)})
	}
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

func unjoin(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// TestLoad_Good loads each testdata/good config and the documented
// example, and compares what they resolve to with their golden files
// (go test ./internal/watch/config -update rewrites them).
func TestLoad_Good(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("testdata", "good", "*.yaml"))
	files = append(files, filepath.Join("..", "..", "..", "docs", "examples", "heapscope.yaml"))
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".yaml")
		t.Run(name, func(t *testing.T) {
			c, err := Load(file, Options{CheckTrigger: func(string) error { return nil }})
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			goldenfile.Check(t, filepath.Join("testdata", "good", name+".golden.json"), viewOf(t, c))
		})
	}
}

func TestLoad_Bad(t *testing.T) {
	group := "groups:\n  - name: api\n    static:\n      - targets: [127.0.0.1:6060]\n"
	noColon := func(expr string) error {
		if !strings.Contains(expr, ">") {
			return errors.New("no comparison: want e.g. memory>=80%")
		}
		return nil
	}
	tests := []struct {
		name string
		yaml string
		want string
	}{
		{"bad duration", "groups:\n  - name: api\n    every: 15x\n    static: [{targets: [h:1]}]\n",
			`heapscope.yaml:3: groups[0].every: bad duration "15x" (want e.g. 15m, 1h, 1d)`},
		{"duration without unit", "defaults:\n  every: 15\n" + group,
			`heapscope.yaml:2: defaults.every: bad duration "15" (want e.g. 15m, 1h, 1d)`},
		{"negative duration", "defaults:\n  window: -5s\n" + group,
			`heapscope.yaml:2: defaults.window: -5s is negative`},
		{"zero period", "defaults:\n  every: 0\n" + group,
			`heapscope.yaml:2: defaults.every: want more than 0`},
		{"window too short", "defaults:\n  window: 10ms\n" + group,
			`heapscope.yaml:2: defaults.window: 10ms is too short: want at least 100ms`},
		{"window not shorter than every", "defaults:\n  every: 1m\n  window: 1m\n" + group,
			`heapscope.yaml:3: defaults.window: 1m is not shorter than every (1m)`},
		{"group period under the default window", "defaults:\n  window: 1m\ngroups:\n  - name: api\n    every: 30s\n    static: [{targets: [h:1]}]\n",
			`heapscope.yaml:5: groups[0].every: 30s is not longer than window (1m)`},
		{"misspelt key", "defaults:\n  evry: 5m\n" + group,
			`heapscope.yaml:2: defaults.evry: unknown key (did you mean every?)`},
		{"camel case key", "defaults:\n  maxBody: 1MiB\n" + group,
			`heapscope.yaml:2: defaults.maxBody: unknown key (did you mean max_body?)`},
		{"Prometheus' name", "groups:\n  - name: api\n    scrape_interval: 1m\n    static: [{targets: [h:1]}]\n",
			`heapscope.yaml:3: groups[0].scrape_interval: unknown key (did you mean every? heapscope's name for Prometheus' scrape_interval)`},
		{"targets in the group", "groups:\n  - name: api\n    targets: [h:1]\n",
			`heapscope.yaml:3: groups[0].targets: unknown key (targets go in a static entry: static: [{targets: [...]}])`},
		{"unknown key far from any", "storage: /var/lib\n" + group,
			`heapscope.yaml:1: storage: unknown key (known here: listen, debug_pprof, concurrency, retention, webhook, pyroscope, defaults, groups)`},
		{"key given twice", "defaults:\n  every: 5m\n  every: 10m\n" + group,
			`heapscope.yaml:3: defaults.every: given twice (first at line 2)`},
		{"merge key", "base: &b {every: 5m}\n",
			`heapscope.yaml:1: base: unknown key (known here: listen, debug_pprof, concurrency, retention, webhook, pyroscope, defaults, groups)`},
		{"merge key in a group", "groups:\n  - <<: {every: 5m}\n    name: api\n",
			`heapscope.yaml:2: groups[0]: merge keys (<<) are not supported: write the keys, or put them in defaults`},
		{"unknown profile, close", "defaults:\n  profiles: [heap, alocs]\n" + group,
			`heapscope.yaml:2: defaults.profiles[1]: unknown profile "alocs" (did you mean allocs?)`},
		{"unknown profile", "defaults:\n  profiles:\n    - heap\n    - trace\n" + group,
			`heapscope.yaml:4: defaults.profiles[1]: unknown profile "trace" (want heap, allocs, goroutine, cpu, block, mutex)`},
		{"profile twice", "defaults:\n  profiles: [heap, cpu, heap]\n" + group,
			`heapscope.yaml:2: defaults.profiles[2]: profile heap is named twice`},
		{"no profiles", "defaults:\n  profiles: []\n" + group,
			`heapscope.yaml:2: defaults.profiles: no profiles: name at least one of heap, allocs, goroutine, cpu, block, mutex`},
		{"concurrency under 1", "concurrency: 0\n" + group,
			`heapscope.yaml:1: concurrency: 0: want at least 1 capture at a time`},
		{"concurrency not a number", "concurrency: four\n" + group,
			`heapscope.yaml:1: concurrency: want an integer, not the string "four"`},
		{"bad size", "defaults:\n  max_body: 64XB\n" + group,
			`heapscope.yaml:2: defaults.max_body: bad size "64XB" (want e.g. 64MiB, 20GiB, 500MB, or a number of bytes)`},
		{"negative size", "retention:\n  max_size: -1GiB\n" + group,
			`heapscope.yaml:2: retention.max_size: -1GiB is negative`},
		{"zero body", "defaults:\n  max_body: 0\n" + group,
			`heapscope.yaml:2: defaults.max_body: want more than 0 bytes, not 0`},
		{"size as a float", "defaults:\n  memory_limit: 1.5\n" + group,
			`heapscope.yaml:2: defaults.memory_limit: want a size such as 64MiB, not the number 1.5`},
		{"bad retention age", "retention: {max_age: 30days}\n" + group,
			`heapscope.yaml:1: retention.max_age: bad duration "30days" (want e.g. 15m, 1h, 1d)`},
		{"listen without port", "listen: localhost\n" + group,
			`heapscope.yaml:1: listen: "localhost": want host:port, such as 127.0.0.1:7071`},
		{"webhook not http", "webhook:\n  url: ftp://hooks.example.com/x\n" + group,
			`heapscope.yaml:2: webhook.url: "ftp://hooks.example.com/x": want an http or https URL`},
		{"webhook without url", "webhook:\n  timeout: 5s\n" + group,
			`heapscope.yaml:2: webhook: no url: give the URL to notify`},
		{"webhook negative retries", "webhook: {url: http://h/, retries: -1}\n" + group,
			`heapscope.yaml:1: webhook.retries: -1 is negative`},
		{"pyroscope without url", "pyroscope:\n  tenant_id: team-a\n" + group,
			`heapscope.yaml:2: pyroscope: no url: give the Pyroscope server's URL, such as http://pyroscope:4040`},
		{"pyroscope not http", "pyroscope:\n  url: grpc://pyroscope:4040\n" + group,
			`heapscope.yaml:2: pyroscope.url: "grpc://pyroscope:4040": want an http or https URL`},
		{"pyroscope misspelt key", "pyroscope:\n  url: http://p:4040\n  tenant: a\n" + group,
			`heapscope.yaml:3: pyroscope.tenant: unknown key (did you mean tenant_id?)`},
		{"pyroscope bad tenant", "pyroscope: {url: http://p:4040, tenant_id: 'a|b'}\n" + group,
			`heapscope.yaml:1: pyroscope.tenant_id: "a|b": want a tenant ID of letters, digits and !-_.*'(), at most 150`},
		{"pyroscope zero timeout", "pyroscope: {url: http://p:4040, timeout: 0}\n" + group,
			`heapscope.yaml:1: pyroscope.timeout: want more than 0`},
		{"pyroscope negative retries", "pyroscope: {url: http://p:4040, retries: -2}\n" + group,
			`heapscope.yaml:1: pyroscope.retries: -2 is negative`},
		{"basic auth without password", "pyroscope:\n  url: http://p:4040\n  basic_auth:\n    username: heapscope\n" + group,
			`heapscope.yaml:4: pyroscope.basic_auth: no password_file: give username and password_file`},
		{"basic auth password missing", "pyroscope:\n  url: http://p:4040\n  basic_auth:\n    username: heapscope\n    password_file: /nonexistent/pyroscope-password\n" + group,
			`heapscope.yaml:5: pyroscope.basic_auth.password_file: open /nonexistent/pyroscope-password: no such file or directory`},
		{"basic auth password a directory", "pyroscope:\n  url: http://p:4040\n  basic_auth: {username: u, password_file: /}\n" + group,
			`heapscope.yaml:3: pyroscope.basic_auth.password_file: /: not a regular file: a directory`},
		{"basic auth username with a colon", "pyroscope:\n  url: http://p:4040\n  basic_auth: {username: 'a:b', password_file: /}\n" + group,
			`heapscope.yaml:3: pyroscope.basic_auth.username: "a:b": want a user name, not empty and without a colon`},
		{"pprof path without slash", "defaults:\n  pprof_path: debug/pprof/\n" + group,
			`heapscope.yaml:2: defaults.pprof_path: "debug/pprof/": want a path such as /debug/pprof/, starting with /`},
		{"empty file", "", `heapscope.yaml: no groups: give at least one group of targets`},
		{"no groups", "concurrency: 2\n", `heapscope.yaml:1: no groups: give at least one group of targets`},
		{"empty groups", "groups: []\n", `heapscope.yaml:1: groups: no groups: give at least one group of targets`},
		{"groups not a list", "groups:\n  api: {}\n", `heapscope.yaml:2: groups: want a list, not a mapping`},
		{"defaults left empty", "defaults:\n" + group, `heapscope.yaml:1: defaults: want a mapping of keys, not nothing`},
		{"group without name", "groups:\n  - static: [{targets: [h:1]}]\n", `heapscope.yaml:2: groups[0]: no name: every group has one`},
		{"group without targets", "groups:\n  - name: api\n", `heapscope.yaml:2: groups[0]: no targets: give static, file_sd or kubernetes`},
		{"bad group name", "groups:\n  - name: my api\n    static: [{targets: [h:1]}]\n",
			`heapscope.yaml:2: groups[0].name: group name "my api": want letters, digits, _, . and -, starting with a letter or digit`},
		{"group name twice", group + "  - name: api\n    static: [{targets: [h:2]}]\n",
			`heapscope.yaml:5: groups[1].name: group "api" is already defined at heapscope.yaml:2`},
		{"target twice across groups", group + "  - name: web\n    static:\n      - targets: [http://127.0.0.1:6060/]\n",
			`heapscope.yaml:7: groups[1].static[0].targets[0]: http://127.0.0.1:6060/debug/pprof/ is already a target at heapscope.yaml:4 (groups[0].static[0].targets[0])`},
		{"target twice in one entry", "groups:\n  - name: api\n    static:\n      - targets: [LOCALHOST:80, http://localhost]\n",
			`heapscope.yaml:4: groups[0].static[0].targets[1]: http://localhost:80/debug/pprof/ is already a target at heapscope.yaml:4 (groups[0].static[0].targets[0])`},
		{"target with the pprof path", "groups:\n  - name: api\n    static:\n      - targets: [http://h:6060/debug/pprof/]\n",
			`heapscope.yaml:4: groups[0].static[0].targets[0]: target "http://h:6060/debug/pprof/": give the service's base URL: the pprof path (/debug/pprof/) is added to it`},
		{"target without port", "groups:\n  - name: api\n    static:\n      - targets: [localhost]\n",
			`heapscope.yaml:4: groups[0].static[0].targets[0]: target "localhost": want a URL (http://host:port) or host:port`},
		{"target with a query", "groups:\n  - name: api\n    static:\n      - targets: [\"https://h/?debug=1\"]\n",
			`heapscope.yaml:4: groups[0].static[0].targets[0]: target "https://h/?debug=1": give the service's base URL, without query or fragment`},
		{"target of another scheme", "groups:\n  - name: api\n    static:\n      - targets: [grpc://h:1]\n",
			`heapscope.yaml:4: groups[0].static[0].targets[0]: target "grpc://h:1": scheme must be http or https`},
		{"target with a bad port", "groups:\n  - name: api\n    static:\n      - targets: [h:99999]\n",
			`heapscope.yaml:4: groups[0].static[0].targets[0]: target "h:99999": bad port "99999"`},
		{"no targets in a static entry", "groups:\n  - name: api\n    static:\n      - labels: {a: b}\n",
			`heapscope.yaml:4: groups[0].static[0].targets: no targets: give URLs or host:port`},
		{"label of heapscope's", "groups:\n  - name: api\n    labels: {instance: x}\n    static: [{targets: [h:1]}]\n",
			`heapscope.yaml:3: groups[0].labels.instance: label instance is heapscope's: every target has it`},
		{"bad label name", "groups:\n  - name: api\n    static:\n      - targets: [h:1]\n        labels: {team-name: x}\n",
			`heapscope.yaml:5: groups[0].static[0].labels.team-name: label "team-name": want letters, digits and _, not starting with a digit`},
		{"reserved label", "groups:\n  - name: api\n    labels:\n      __address__: h:2\n    static: [{targets: [h:1]}]\n",
			`heapscope.yaml:4: groups[0].labels.__address__: label __address__: names beginning with __ are reserved`},
		{"label without value", "groups:\n  - name: api\n    labels:\n      team:\n    static: [{targets: [h:1]}]\n",
			`heapscope.yaml:4: groups[0].labels.team: want a label value, not nothing`},
		{"trigger the parser rejects", "defaults:\n  triggers:\n    - memory>=80%\n    - expr: memory 80%\n" + group,
			`heapscope.yaml:4: defaults.triggers[1].expr: no comparison: want e.g. memory>=80%`},
		{"trigger written alone the parser rejects", "defaults:\n  triggers:\n    - memory\n" + group,
			`heapscope.yaml:3: defaults.triggers[0]: no comparison: want e.g. memory>=80%`},
		{"trigger without expression", "defaults:\n  triggers:\n    - cooldown: 5m\n" + group,
			`heapscope.yaml:3: defaults.triggers[0]: no expr: give the trigger's condition, such as memory>=80%`},
		{"empty trigger", "defaults:\n  triggers: [\"  \"]\n" + group,
			`heapscope.yaml:2: defaults.triggers[0]: empty expression: give a condition such as memory>=80%`},
		{"trigger with a bad key", "defaults:\n  triggers:\n    - expr: memory>=80%\n      cooldwn: 5m\n" + group,
			`heapscope.yaml:4: defaults.triggers[0].cooldwn: unknown key (did you mean cooldown?)`},
		{"empty hysteresis", "defaults:\n  triggers:\n    - expr: memory>=80%\n      hysteresis: \"\"\n" + group,
			`heapscope.yaml:4: defaults.triggers[0].hysteresis: want an amount such as 5%, not the string ""`},
		{"file_sd of another format", "groups:\n  - name: api\n    file_sd:\n      - files: [targets.txt]\n",
			`heapscope.yaml:4: groups[0].file_sd[0].files[0]: "targets.txt": want a path or pattern (*) of .json, .yml or .yaml files`},
		{"file_sd glob in a directory", "groups:\n  - name: api\n    file_sd:\n      - files: [\"*/targets.json\"]\n",
			`heapscope.yaml:4: groups[0].file_sd[0].files[0]: "*/targets.json": want a path or pattern (*) of .json, .yml or .yaml files`},
		{"file_sd bad pattern", "groups:\n  - name: api\n    file_sd:\n      - files: [\"t[.json\"]\n",
			`heapscope.yaml:4: groups[0].file_sd[0].files[0]: "t[.json": syntax error in pattern`},
		{"file_sd without files", "groups:\n  - name: api\n    file_sd:\n      - refresh_interval: 1m\n",
			`heapscope.yaml:4: groups[0].file_sd[0].files: no files: give paths or patterns of .json or .yaml files`},
		{"file_sd refreshed never", "groups:\n  - name: api\n    file_sd:\n      - files: [t.json]\n        refresh_interval: 0s\n",
			`heapscope.yaml:5: groups[0].file_sd[0].refresh_interval: want more than 0`},
		{"YAML syntax", "concurrency: 2\nlisten: 127.0.0.1: 7071\n" + group, `heapscope.yaml:2: mapping values are not allowed in this context`},
		{"tab indentation", "groups:\n\t- name: api\n", `heapscope.yaml:2: found character that cannot start any token`},
		{"two documents", group + "---\nconcurrency: 2\n", `heapscope.yaml:5: a second YAML document: the file holds one`},
		{"not a mapping", "- name: api\n", `heapscope.yaml:1: want a mapping of keys, not a list`},
		{"string where a list goes", "groups:\n  - name: api\n    static: 127.0.0.1:6060\n",
			`heapscope.yaml:3: groups[0].static: want a list, not the string "127.0.0.1:6060"`},
		{"custom tag", "listen: !env LISTEN\n" + group, `heapscope.yaml:1: listen: want a string, not !env "LISTEN"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := parse([]byte(tt.yaml), "heapscope.yaml", Options{CheckTrigger: noColon})
			if err == nil {
				t.Fatalf("parse accepted it: %+v", c)
			}
			if err.Error() != tt.want {
				t.Errorf("error\n  %s\nwant\n  %s", err, tt.want)
			}
		})
	}
}

func TestBasicAuth_PasswordIsReadAtEachUse(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "password")
	if err := os.WriteFile(file, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	config := filepath.Join(dir, "heapscope.yaml")
	yaml := "pyroscope:\n  url: http://p:4040\n  basic_auth: {username: heapscope, password_file: password}\n" +
		"groups: [{name: a, static: [{targets: [h:1]}]}]\n"
	if err := os.WriteFile(config, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := Load(config, Options{})
	if err != nil {
		t.Fatal(err)
	}
	b := c.Pyroscope.BasicAuth
	if b.PasswordFile != file {
		t.Errorf("password_file resolved to %s, want %s (beside the config)", b.PasswordFile, file)
	}
	for _, want := range []string{"s3cret", "rotated"} {
		if want == "rotated" {
			if err := os.WriteFile(file, []byte("  rotated\r\n"), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		if got, err := b.Password(); err != nil || got != want {
			t.Errorf("Password() = %q, %v; want %q", got, err, want)
		}
	}
	os.Remove(file)
	if _, err := b.Password(); err == nil || !strings.Contains(err.Error(), file) {
		t.Errorf("Password() of a removed file: %v, want an error naming it", err)
	}
}

func TestLoad_CheckTriggerErrorIsWrapped(t *testing.T) {
	sentinel := errors.New("unknown metric")
	_, err := parse([]byte("defaults:\n  triggers: [rss>=1GiB]\ngroups: [{name: a, static: [{targets: [h:1]}]}]\n"), "c.yaml",
		Options{CheckTrigger: func(string) error { return sentinel }})
	if !errors.Is(err, sentinel) {
		t.Errorf("error %v does not wrap the parser's", err)
	}
}

func TestLoad_MissingFile(t *testing.T) {
	_, err := Load(filepath.Join(t.TempDir(), "nope.yaml"), Options{})
	if err == nil || !strings.HasPrefix(err.Error(), "read watch config: open ") {
		t.Errorf("error %v, want the open error", err)
	}
}

func TestLoad_ResolvesGroupSettings(t *testing.T) {
	c, err := Load(filepath.Join("testdata", "good", "overrides.yaml"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	api, legacy := c.Groups[0].Settings, c.Groups[1].Settings
	if api.Every != 10*time.Minute || api.Window != 45*time.Second || api.MaxBody != 32<<20 {
		t.Errorf("api settings %+v: want its every and window over the defaults' max_body", api)
	}
	if len(api.Triggers) != 2 || api.Triggers[1].Cooldown != 0 || api.Triggers[0].Cooldown != DefaultCooldown {
		t.Errorf("api triggers %+v: want the defaults', an explicit cooldown 0 kept", api.Triggers)
	}
	if len(legacy.Triggers) != 0 {
		t.Errorf("legacy triggers %v: want the empty list it gives, not the defaults'", legacy.Triggers)
	}
	if legacy.PprofPath != "/admin/pprof/" {
		t.Errorf("pprof path %q: want it ending with a slash", legacy.PprofPath)
	}
	// A group's settings are its own: changing one changes no other.
	c.Groups[0].Settings.Profiles[0] = "changed"
	if c.Defaults.Profiles[0] != "heap" || c.Groups[2].Settings.Profiles[0] != "heap" {
		t.Error("groups share their profiles list with the defaults")
	}
}

func TestDefault(t *testing.T) {
	c := Default()
	s := c.Defaults
	if s.Every != 15*time.Minute || s.Window != 30*time.Second || s.MaxBody != 64<<20 || s.PprofPath != "/debug/pprof/" ||
		strings.Join(s.Profiles, ",") != "heap,allocs,goroutine,cpu" || c.Concurrency != 16 || c.Webhook != nil || len(c.Groups) != 0 {
		t.Errorf("Default() = %+v", c)
	}
	if err := checkSettings(&s, func(k string) string { return k }); err != nil {
		t.Errorf("the defaults do not pass their own checks: %v", err)
	}
}

func TestForURLs(t *testing.T) {
	c, err := ForURLs([]string{"127.0.0.1:6060", "https://svc.example:8443"}, Settings{
		Every: 5 * time.Minute, Triggers: []Trigger{{Expr: "memory>=80%"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Groups) != 1 || c.Groups[0].Name != CLIGroup {
		t.Fatalf("groups %+v, want the one group cli", c.Groups)
	}
	s := c.Groups[0].Settings
	if s.Every != 5*time.Minute || s.Window != DefaultWindow || s.Timeout != DefaultTimeout || s.PprofPath != DefaultPprofPath || len(s.Profiles) != 4 {
		t.Errorf("settings %+v: want every as given, the rest the defaults'", s)
	}
	if tr := s.Triggers[0]; tr.Pos != "command line" || tr.Cooldown != DefaultCooldown {
		t.Errorf("trigger %+v: want its position the command line, the default cooldown", tr)
	}
	c.Groups[0].Static[0].PID = 4242
	ts, err := c.Targets(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(ts) != 2 || ts[0].Key != "http://127.0.0.1:6060/debug/pprof/" || ts[1].Key != "https://svc.example:8443/debug/pprof/" {
		t.Fatalf("targets %+v", ts)
	}
	if ts[0].PID != 4242 || ts[0].Labels["group"] != "cli" || ts[0].Labels["instance"] != "127.0.0.1:6060" {
		t.Errorf("target %+v: want the PID given, group and instance labels", ts[0])
	}
}

func TestForURLs_Bad(t *testing.T) {
	tests := []struct {
		name string
		urls []string
		s    Settings
		want string
	}{
		{"no URL", nil, Settings{}, "no target: give the URL of at least one service, such as http://127.0.0.1:6060"},
		{"window over every", []string{"h:1"}, Settings{Every: 10 * time.Second},
			"--window: 30s is not shorter than every (10s)"},
		{"negative every", []string{"h:1"}, Settings{Every: -time.Second}, "--every: -1s is negative"},
		{"bad profile", []string{"h:1"}, Settings{Profiles: []string{"heap", "cpuu"}}, `--profiles: unknown profile "cpuu" (did you mean cpu?)`},
		{"empty trigger", []string{"h:1"}, Settings{Triggers: []Trigger{{Expr: ""}}},
			`--trigger: "" (command line): empty expression: give a condition such as memory>=80%`},
		{"bad URL", []string{"ftp://h:1"}, Settings{}, `target "ftp://h:1": scheme must be http or https`},
		{"same target twice", []string{"h:1", "http://H:1/"}, Settings{}, "target http://h:1/debug/pprof/ is given twice (h:1 and http://H:1/)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ForURLs(tt.urls, tt.s)
			if err == nil || err.Error() != tt.want {
				t.Errorf("ForURLs = %v, want %s", err, tt.want)
			}
		})
	}
}

// TestParseDuration: the config reads durations as units.ParseDuration
// does (its own tests hold the grammar), and says what it wants of a bad
// one.
func TestParseDuration(t *testing.T) {
	tests := []struct {
		in   string
		want time.Duration
		err  string
	}{
		{"1d1.5h", 25*time.Hour + 30*time.Minute, ""},
		{"1y", 365 * 24 * time.Hour, ""},
		{"-5m", 0, "-5m is negative"},
		{"15", 0, `bad duration "15" (want e.g. 15m, 1h, 1d)`},
		{"", 0, `bad duration "" (want e.g. 15m, 1h, 1d)`},
	}
	for _, tt := range tests {
		got, err := ParseDuration(tt.in)
		if tt.err != "" {
			if err == nil || err.Error() != tt.err {
				t.Errorf("ParseDuration(%q) = %v, %v, want error %s", tt.in, got, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("ParseDuration(%q) = %v, %v, want %v", tt.in, got, err, tt.want)
		}
	}
}
