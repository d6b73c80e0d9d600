package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode"

	"go.yaml.in/yaml/v3"
)

// maxFile caps the size of a config or file_sd file.
const maxFile = 16 << 20

// maxNodes caps the YAML nodes a file may expand to, aliases followed:
// a few aliases of aliases cannot make the decoder walk for ever.
const maxNodes = 1 << 20

// Load reads the config file at path. Each error names the file, the
// line and the key: heapscope.yaml:12: groups[0].every: bad duration
// "15x" (want e.g. 15m, 1h, 1d). file_sd files are not read here (see
// Targets and Watch), only their patterns checked.
func Load(path string, opts Options) (*Config, error) {
	data, err := readCapped(path)
	if err != nil {
		return nil, fmt.Errorf("read watch config: %w", err)
	}
	return parse(data, path, opts)
}

// readCapped reads a file of at most maxFile bytes. The config file may
// be a pipe (--config <(...)), so it is opened as it is.
func readCapped(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readAllCapped(f, path)
}

// errNotRegular marks a file discovery will not read: a FIFO, a device,
// a socket or a directory.
var errNotRegular = errors.New("not a regular file")

// openRegular opens path for reading only if it is a regular file. It
// opens without waiting (O_NONBLOCK), then checks what it opened: a FIFO
// that matches a file_sd pattern cannot hold discovery waiting for a
// writer, and a device is never read.
func openRegular(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("%s: %w: %s", path, errNotRegular, fileKind(fi.Mode()))
	}
	return f, nil
}

// fileKind names the type of a file that is not regular.
func fileKind(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m.IsDir():
		return "a directory"
	}
	return "mode " + m.String()
}

// readRegular reads a regular file of at most maxFile bytes; anything
// else is refused without blocking (see openRegular).
func readRegular(path string) ([]byte, error) {
	f, err := openRegular(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readAllCapped(f, path)
}

// readAllCapped reads f, named path in errors, refusing more than maxFile
// bytes.
func readAllCapped(f *os.File, path string) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(f, maxFile+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxFile {
		return nil, fmt.Errorf("%s is larger than %d MiB", path, maxFile>>20)
	}
	return data, nil
}

// parse decodes a config file's bytes; file names it in errors and
// anchors relative file_sd paths.
func parse(data []byte, file string, opts Options) (*Config, error) {
	root, err := parseYAML(data, file)
	if err != nil {
		return nil, err
	}
	d := &decoder{file: file, dir: filepath.Dir(file), opts: opts, seen: map[string]string{}, groupPos: map[string]string{}}
	c := Default()
	c.File, c.opts = file, opts
	if root == nil {
		return nil, fmt.Errorf("%s: no groups: give at least one group of targets", file)
	}
	nodes, err := decodeMapping(d, root, "", configFields, c)
	if err != nil {
		return nil, err
	}
	if nodes["groups"] == nil {
		return nil, d.fail(root, "", errors.New("no groups: give at least one group of targets"))
	}
	return c, nil
}

// parseYAML parses one YAML document (empty ones may follow it) and
// returns its root, nil when the document is empty.
func parseYAML(data []byte, file string) (*yaml.Node, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil
		}
		return nil, yamlError(file, err)
	}
	for {
		var next yaml.Node
		err := dec.Decode(&next)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, yamlError(file, err)
		}
		if len(next.Content) > 0 && !isNull(next.Content[0]) {
			return nil, fmt.Errorf("%s:%d: a second YAML document: the file holds one", file, next.Line)
		}
	}
	if len(doc.Content) == 0 {
		return nil, nil
	}
	root := doc.Content[0]
	if n := expandedSize(root, map[*yaml.Node]int{}); n > maxNodes {
		return nil, fmt.Errorf("%s: more than %d YAML nodes once aliases are expanded", file, maxNodes)
	}
	if isNull(root) {
		return nil, nil
	}
	return root, nil
}

// yamlError turns the parser's "yaml: line 3: …" into "file:3: …".
func yamlError(file string, err error) error {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	if rest, ok := strings.CutPrefix(msg, "line "); ok {
		if num, text, ok := strings.Cut(rest, ": "); ok {
			if _, err := strconv.Atoi(num); err == nil {
				return fmt.Errorf("%s:%s: %s", file, num, text)
			}
		}
	}
	return fmt.Errorf("%s: %s", file, msg)
}

// expandedSize counts the nodes under n with aliases followed, stopping
// past maxNodes; memo holds the count of each node seen (-1 while it is
// being counted, which only a cycle meets).
func expandedSize(n *yaml.Node, memo map[*yaml.Node]int) int {
	if v, ok := memo[n]; ok {
		if v < 0 {
			return maxNodes + 1
		}
		return v
	}
	memo[n] = -1
	size := 1
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		size += expandedSize(n.Alias, memo)
	}
	for _, c := range n.Content {
		if size > maxNodes {
			break
		}
		size += expandedSize(c, memo)
	}
	size = min(size, maxNodes+1)
	memo[n] = size
	return size
}

// decoder carries what decoding needs besides the node at hand.
type decoder struct {
	file string
	dir  string
	opts Options
	// seen holds where each target met so far was, by key.
	seen map[string]string
	// groupPos holds the position of each group name met so far.
	groupPos map[string]string
}

// posError is an error at a place in a file: "file:line: path: err".
type posError struct {
	pos, path string
	err       error
}

func (e *posError) Error() string {
	if e.path == "" {
		return e.pos + ": " + e.err.Error()
	}
	return e.pos + ": " + e.path + ": " + e.err.Error()
}

func (e *posError) Unwrap() error { return e.err }

// pos is file:line of n, or the file alone for a node without a line.
func (d *decoder) pos(n *yaml.Node) string {
	if n == nil || n.Line == 0 {
		return d.file
	}
	return d.file + ":" + strconv.Itoa(n.Line)
}

func (d *decoder) fail(n *yaml.Node, path string, err error) error {
	return &posError{pos: d.pos(n), path: path, err: err}
}

func (d *decoder) failf(n *yaml.Node, path, format string, args ...any) error {
	return d.fail(n, path, fmt.Errorf(format, args...))
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func index(path string, i int) string { return path + "[" + strconv.Itoa(i) + "]" }

// plainKey is a key that reads as itself in a path.
var plainKey = regexp.MustCompile(`^[A-Za-z0-9_.<-]+$`)

// plain writes a key for a path or a message: as it is when it is plain,
// quoted otherwise, so that an error stays one readable line.
func plain(key string) string {
	if plainKey.MatchString(key) {
		return key
	}
	return strconv.Quote(key)
}

// resolve follows aliases to the node they name.
func resolve(n *yaml.Node) *yaml.Node {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	return n
}

// kind names what n is, for "want X, not Y".
func kind(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!null":
			return "nothing"
		case "!!str":
			return fmt.Sprintf("the string %q", n.Value)
		case "!!int":
			return "the integer " + n.Value
		case "!!float":
			return "the number " + n.Value
		case "!!bool":
			return "the boolean " + n.Value
		}
		tag := n.ShortTag()
		if strings.ContainsFunc(tag, func(r rune) bool { return !unicode.IsPrint(r) || unicode.IsSpace(r) }) {
			tag = strconv.Quote(tag)
		}
		return fmt.Sprintf("%s %q", tag, n.Value)
	}
	return "a YAML node"
}

func isNull(n *yaml.Node) bool { return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" }

// field is one key of a mapping and how its value decodes into a T.
type field[T any] struct {
	key    string
	decode func(d *decoder, n *yaml.Node, path string, dst *T) error
}

// decodeMapping decodes the mapping n through fs into dst: every key must
// be one of fs, once; the values are decoded in fs's order (so defaults
// come before groups, a group's settings before its targets). It returns
// the value nodes by key.
func decodeMapping[T any](d *decoder, n *yaml.Node, path string, fs []field[T], dst *T) (map[string]*yaml.Node, error) {
	n = resolve(n)
	nodes := map[string]*yaml.Node{}
	if n.Kind != yaml.MappingNode {
		return nil, d.failf(n, path, "want a mapping of keys, not %s", kind(n))
	}
	keys := map[string]*yaml.Node{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := resolve(n.Content[i]), n.Content[i+1]
		if k.Kind == yaml.ScalarNode && k.ShortTag() == "!!merge" {
			return nil, d.failf(k, path, "merge keys (<<) are not supported: write the keys, or put them in defaults")
		}
		if k.Kind != yaml.ScalarNode || k.ShortTag() != "!!str" {
			return nil, d.failf(k, path, "want a key, not %s", kind(k))
		}
		p := join(path, plain(k.Value))
		if first, ok := keys[k.Value]; ok {
			return nil, d.failf(k, p, "given twice (first at line %d)", first.Line)
		}
		keys[k.Value] = k
		if !slices.ContainsFunc(fs, func(f field[T]) bool { return f.key == k.Value }) {
			return nil, d.fail(k, p, unknownKey(k.Value, keysOf(fs)))
		}
		nodes[k.Value] = v
	}
	for _, f := range fs {
		if v, ok := nodes[f.key]; ok {
			if err := f.decode(d, v, join(path, f.key), dst); err != nil {
				return nil, err
			}
		}
	}
	return nodes, nil
}

func keysOf[T any](fs []field[T]) []string {
	keys := make([]string, len(fs))
	for i, f := range fs {
		keys[i] = f.key
	}
	return keys
}

// prometheusKeys are the Prometheus names of keys that heapscope names
// otherwise, for the people who write them by habit.
var prometheusKeys = map[string]string{
	"job_name":        "name",
	"scrape_interval": "every",
	"scrape_timeout":  "timeout",
	"static_configs":  "static",
	"file_sd_configs": "file_sd",
	"scrape_configs":  "groups",
	"global":          "defaults",
	"body_size_limit": "max_body",
	"targets":         "static",
}

// unknownKey says a key is unknown and, when one of known is close to
// it, which was meant.
func unknownKey(key string, known []string) error {
	if alt, ok := prometheusKeys[key]; ok && slices.Contains(known, alt) {
		if key == "targets" {
			return errors.New("unknown key (targets go in a static entry: static: [{targets: [...]}])")
		}
		return fmt.Errorf("unknown key (did you mean %s? heapscope's name for Prometheus' %s)", alt, key)
	}
	if alt := closest(key, known); alt != "" {
		return fmt.Errorf("unknown key (did you mean %s?)", alt)
	}
	return fmt.Errorf("unknown key (known here: %s)", strings.Join(known, ", "))
}

// closest returns the word of known nearest to w when it is near enough
// to be a misspelling (case, _ and - aside), or "".
func closest(w string, known []string) string {
	norm := func(s string) string {
		return strings.NewReplacer("_", "", "-", "").Replace(strings.ToLower(s))
	}
	best, bestDist := "", 3
	for _, k := range known {
		dist := editDistance(norm(w), norm(k))
		if dist < bestDist && dist*2 < len(norm(k)) {
			best, bestDist = k, dist
		}
	}
	return best
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}

// str decodes a string.
func (d *decoder) str(n *yaml.Node, path string) (string, error) {
	n = resolve(n)
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!str" {
		return "", d.failf(n, path, "want a string, not %s", kind(n))
	}
	return n.Value, nil
}

// boolean decodes true or false.
func (d *decoder) boolean(n *yaml.Node, path string) (bool, error) {
	n = resolve(n)
	var v bool
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!bool" || n.Decode(&v) != nil {
		return false, d.failf(n, path, "want true or false, not %s", kind(n))
	}
	return v, nil
}

// integer decodes an integer.
func (d *decoder) integer(n *yaml.Node, path string) (int, error) {
	n = resolve(n)
	var v int
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!int" || n.Decode(&v) != nil {
		return 0, d.failf(n, path, "want an integer, not %s", kind(n))
	}
	return v, nil
}

// duration decodes a duration: a string in Go's or Prometheus' form, or
// the integer 0.
func (d *decoder) duration(n *yaml.Node, path string) (time.Duration, error) {
	n = resolve(n)
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!int" && n.Value == "0" {
		return 0, nil
	}
	if n.Kind != yaml.ScalarNode || (n.ShortTag() != "!!str" && n.ShortTag() != "!!int" && n.ShortTag() != "!!float") {
		return 0, d.failf(n, path, "want a duration such as 15m, not %s", kind(n))
	}
	v, err := ParseDuration(n.Value)
	if err != nil {
		return 0, d.fail(n, path, err)
	}
	return v, nil
}

// size decodes a size: a string with a unit, or an integer of bytes.
func (d *decoder) size(n *yaml.Node, path string) (int64, error) {
	n = resolve(n)
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!int" {
		var v int64
		if err := n.Decode(&v); err != nil {
			return 0, d.failf(n, path, "bad size %s: out of range", n.Value)
		}
		if v < 0 {
			return 0, d.failf(n, path, "%s is negative", n.Value)
		}
		return v, nil
	}
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!str" {
		return 0, d.failf(n, path, "want a size such as 64MiB, not %s", kind(n))
	}
	v, err := ParseSize(n.Value)
	if err != nil {
		return 0, d.fail(n, path, err)
	}
	return v, nil
}

// list returns the items of a list.
func (d *decoder) list(n *yaml.Node, path string) ([]*yaml.Node, error) {
	n = resolve(n)
	if n.Kind != yaml.SequenceNode {
		return nil, d.failf(n, path, "want a list, not %s", kind(n))
	}
	return n.Content, nil
}

// strings decodes a list of strings with the node of each.
func (d *decoder) strings(n *yaml.Node, path string) ([]string, []*yaml.Node, error) {
	items, err := d.list(n, path)
	if err != nil {
		return nil, nil, err
	}
	out := make([]string, len(items))
	for i, item := range items {
		if out[i], err = d.str(item, index(path, i)); err != nil {
			return nil, nil, err
		}
	}
	return out, items, nil
}

// labels decodes a mapping of label names to values (strings, numbers,
// booleans or times, taken as written). In a file_sd file (sd), Prometheus' meta labels (__…) are
// dropped; in the config they are an error.
func (d *decoder) labels(n *yaml.Node, path string, sd bool) (map[string]string, error) {
	n = resolve(n)
	out := map[string]string{}
	if n.Kind != yaml.MappingNode {
		return nil, d.failf(n, path, "want a mapping of label names to values, not %s", kind(n))
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := resolve(n.Content[i]), resolve(n.Content[i+1])
		if k.Kind != yaml.ScalarNode || k.ShortTag() != "!!str" {
			return nil, d.failf(k, path, "want a label name, not %s", kind(k))
		}
		p := join(path, plain(k.Value))
		if _, ok := out[k.Value]; ok {
			return nil, d.failf(k, p, "given twice")
		}
		if sd && strings.HasPrefix(k.Value, "__") {
			continue
		}
		if err := checkLabelName(k.Value); err != nil {
			return nil, d.fail(k, p, err)
		}
		if v.Kind != yaml.ScalarNode || !slices.Contains([]string{"!!str", "!!int", "!!float", "!!bool", "!!timestamp"}, v.ShortTag()) {
			return nil, d.failf(v, p, "want a label value, not %s", kind(v))
		}
		out[k.Value] = v.Value
	}
	return out, nil
}

// configFields are the top-level keys.
var configFields = []field[Config]{
	{"listen", func(d *decoder, n *yaml.Node, path string, c *Config) error {
		s, err := d.str(n, path)
		if err != nil {
			return err
		}
		c.Listen = s
		return d.check(n, path, checkListen(s))
	}},
	{"debug_pprof", func(d *decoder, n *yaml.Node, path string, c *Config) error {
		v, err := d.boolean(n, path)
		c.DebugPprof = v
		return err
	}},
	{"concurrency", func(d *decoder, n *yaml.Node, path string, c *Config) error {
		v, err := d.integer(n, path)
		if err != nil {
			return err
		}
		c.Concurrency = v
		return d.check(n, path, checkConcurrency(v))
	}},
	{"retention", func(d *decoder, n *yaml.Node, path string, c *Config) error {
		_, err := decodeMapping(d, n, path, retentionFields, &c.Retention)
		return err
	}},
	{"webhook", func(d *decoder, n *yaml.Node, path string, c *Config) error {
		w := &Webhook{Timeout: DefaultWebhookTimeout, Retries: DefaultWebhookRetries, Format: FormatJSON, RepeatInterval: DefaultRepeatInterval}
		nodes, err := decodeMapping(d, n, path, webhookFields, w)
		if err != nil {
			return err
		}
		if nodes["url"] == nil {
			return d.failf(resolve(n), path, "no url: give the URL to notify")
		}
		c.Webhook = w
		return nil
	}},
	{"pyroscope", func(d *decoder, n *yaml.Node, path string, c *Config) error {
		p := &Pyroscope{Timeout: DefaultPyroscopeTimeout, Retries: DefaultPyroscopeRetries}
		nodes, err := decodeMapping(d, n, path, pyroscopeFields, p)
		if err != nil {
			return err
		}
		if nodes["url"] == nil {
			return d.failf(resolve(n), path, "no url: give the Pyroscope server's URL, such as http://pyroscope:4040")
		}
		c.Pyroscope = p
		return nil
	}},
	{"defaults", func(d *decoder, n *yaml.Node, path string, c *Config) error {
		nodes, err := decodeMapping(d, n, path, settingsFields, &c.Defaults)
		if err != nil {
			return err
		}
		return d.checkWindow(c.Defaults, path, nodes)
	}},
	{"groups", func(d *decoder, n *yaml.Node, path string, c *Config) error {
		items, err := d.list(n, path)
		if err != nil {
			return err
		}
		if len(items) == 0 {
			return d.failf(resolve(n), path, "no groups: give at least one group of targets")
		}
		for i, item := range items {
			g, err := d.group(item, index(path, i), c.Defaults)
			if err != nil {
				return err
			}
			c.Groups = append(c.Groups, g)
		}
		return nil
	}},
}

// check wraps a value's error with its place.
func (d *decoder) check(n *yaml.Node, path string, err error) error {
	if err == nil {
		return nil
	}
	return d.fail(resolve(n), path, err)
}

var retentionFields = []field[Retention]{
	{"max_age", func(d *decoder, n *yaml.Node, path string, r *Retention) error {
		v, err := d.duration(n, path)
		r.MaxAge = v
		return err
	}},
	{"max_size", func(d *decoder, n *yaml.Node, path string, r *Retention) error {
		v, err := d.size(n, path)
		r.MaxSize = v
		return err
	}},
}

var webhookFields = []field[Webhook]{
	{"url", func(d *decoder, n *yaml.Node, path string, w *Webhook) error {
		s, err := d.str(n, path)
		if err != nil {
			return err
		}
		w.URL = s
		return d.check(n, path, checkWebhookURL(s))
	}},
	{"timeout", func(d *decoder, n *yaml.Node, path string, w *Webhook) error {
		v, err := d.duration(n, path)
		if err != nil {
			return err
		}
		w.Timeout = v
		return d.check(n, path, positive(v))
	}},
	{"retries", func(d *decoder, n *yaml.Node, path string, w *Webhook) error {
		v, err := d.integer(n, path)
		if err != nil {
			return err
		}
		w.Retries = v
		if v < 0 {
			return d.failf(resolve(n), path, "%d is negative", v)
		}
		return nil
	}},
	{"format", func(d *decoder, n *yaml.Node, path string, w *Webhook) error {
		s, err := d.str(n, path)
		if err != nil {
			return err
		}
		w.Format = s
		if s != FormatJSON && s != FormatAlertmanager {
			return d.failf(resolve(n), path, "%q: choose json or alertmanager", s)
		}
		return nil
	}},
	{"repeat_interval", func(d *decoder, n *yaml.Node, path string, w *Webhook) error {
		v, err := d.duration(n, path)
		if err != nil {
			return err
		}
		w.RepeatInterval = v
		return d.check(n, path, positive(v))
	}},
	{"external_url", func(d *decoder, n *yaml.Node, path string, w *Webhook) error {
		s, err := d.str(n, path)
		if err != nil {
			return err
		}
		w.ExternalURL = strings.TrimSuffix(s, "/")
		return d.check(n, path, checkWebhookURL(s))
	}},
}

var pyroscopeFields = []field[Pyroscope]{
	{"url", func(d *decoder, n *yaml.Node, path string, p *Pyroscope) error {
		s, err := d.str(n, path)
		if err != nil {
			return err
		}
		p.URL = s
		return d.check(n, path, checkWebhookURL(s))
	}},
	{"basic_auth", func(d *decoder, n *yaml.Node, path string, p *Pyroscope) error {
		b := &BasicAuth{}
		nodes, err := decodeMapping(d, n, path, basicAuthFields, b)
		if err != nil {
			return err
		}
		for _, key := range []string{"username", "password_file"} {
			if nodes[key] == nil {
				return d.failf(resolve(n), path, "no %s: give username and password_file", key)
			}
		}
		p.BasicAuth = b
		return nil
	}},
	{"tenant_id", func(d *decoder, n *yaml.Node, path string, p *Pyroscope) error {
		s, err := d.str(n, path)
		if err != nil {
			return err
		}
		p.TenantID = s
		return d.check(n, path, checkTenantID(s))
	}},
	{"timeout", func(d *decoder, n *yaml.Node, path string, p *Pyroscope) error {
		v, err := d.duration(n, path)
		if err != nil {
			return err
		}
		p.Timeout = v
		return d.check(n, path, positive(v))
	}},
	{"retries", func(d *decoder, n *yaml.Node, path string, p *Pyroscope) error {
		v, err := d.integer(n, path)
		if err != nil {
			return err
		}
		p.Retries = v
		if v < 0 {
			return d.failf(resolve(n), path, "%d is negative", v)
		}
		return nil
	}},
}

var basicAuthFields = []field[BasicAuth]{
	{"username", func(d *decoder, n *yaml.Node, path string, b *BasicAuth) error {
		s, err := d.str(n, path)
		if err != nil {
			return err
		}
		b.Username = s
		if s == "" || strings.Contains(s, ":") {
			return d.failf(resolve(n), path, "%q: want a user name, not empty and without a colon", s)
		}
		return nil
	}},
	{"password_file", func(d *decoder, n *yaml.Node, path string, b *BasicAuth) error {
		s, err := d.str(n, path)
		if err != nil {
			return err
		}
		if s != "" && !filepath.IsAbs(s) {
			s = filepath.Join(d.dir, s)
		}
		b.PasswordFile = s
		return d.check(n, path, checkPasswordFile(s))
	}},
}

// settingsFields are the keys of defaults, which a group may override.
// Each value is checked alone by settingChecks, as ForURLs checks it.
var settingsFields = []field[Settings]{
	durationSetting("every", func(s *Settings) *time.Duration { return &s.Every }),
	durationSetting("window", func(s *Settings) *time.Duration { return &s.Window }),
	durationSetting("timeout", func(s *Settings) *time.Duration { return &s.Timeout }),
	durationSetting("poll", func(s *Settings) *time.Duration { return &s.Poll }),
	sizeSetting("max_body", func(s *Settings) *int64 { return &s.MaxBody }),
	{"profiles", func(d *decoder, n *yaml.Node, path string, s *Settings) error {
		names, nodes, err := d.strings(n, path)
		if err != nil {
			return err
		}
		for i, name := range names {
			if err := checkProfile(name, names[:i]); err != nil {
				return d.fail(nodes[i], index(path, i), err)
			}
		}
		s.Profiles = names
		return d.check(n, path, settingChecks["profiles"](s))
	}},
	stringSetting("pprof_path", func(s *Settings) *string { return &s.PprofPath }),
	stringSetting("metrics_path", func(s *Settings) *string { return &s.MetricsPath }),
	sizeSetting("memory_limit", func(s *Settings) *int64 { return &s.MemoryLimit }),
	{"triggers", func(d *decoder, n *yaml.Node, path string, s *Settings) error {
		items, err := d.list(n, path)
		if err != nil {
			return err
		}
		s.Triggers = nil
		for i, item := range items {
			t, err := d.trigger(item, index(path, i))
			if err != nil {
				return err
			}
			s.Triggers = append(s.Triggers, t)
		}
		return nil
	}},
}

func durationSetting(key string, at func(*Settings) *time.Duration) field[Settings] {
	return field[Settings]{key, func(d *decoder, n *yaml.Node, path string, s *Settings) error {
		v, err := d.duration(n, path)
		if err != nil {
			return err
		}
		*at(s) = v
		return d.check(n, path, settingChecks[key](s))
	}}
}

func sizeSetting(key string, at func(*Settings) *int64) field[Settings] {
	return field[Settings]{key, func(d *decoder, n *yaml.Node, path string, s *Settings) error {
		v, err := d.size(n, path)
		if err != nil {
			return err
		}
		*at(s) = v
		return d.check(n, path, settingChecks[key](s))
	}}
}

func stringSetting(key string, at func(*Settings) *string) field[Settings] {
	return field[Settings]{key, func(d *decoder, n *yaml.Node, path string, s *Settings) error {
		v, err := d.str(n, path)
		if err != nil {
			return err
		}
		*at(s) = v
		return d.check(n, path, settingChecks[key](s))
	}}
}

// checkWindow checks that the window is shorter than the period, at the
// key the mapping gave (window first); nothing when it gave neither.
func (d *decoder) checkWindow(s Settings, path string, nodes map[string]*yaml.Node) error {
	for _, key := range []string{"window", "every"} {
		if n := nodes[key]; n != nil {
			return d.check(n, join(path, key), windowOrder(s, key))
		}
	}
	return nil
}

var triggerFields = []field[Trigger]{
	{"expr", func(d *decoder, n *yaml.Node, path string, t *Trigger) error {
		s, err := d.str(n, path)
		t.Expr = s
		return err
	}},
	{"hysteresis", func(d *decoder, n *yaml.Node, path string, t *Trigger) error {
		n = resolve(n)
		if n.Kind != yaml.ScalarNode || !slices.Contains([]string{"!!str", "!!int", "!!float"}, n.ShortTag()) || n.Value == "" {
			return d.failf(n, path, "want an amount such as 5%%, not %s", kind(n))
		}
		t.Hysteresis = n.Value
		return nil
	}},
	{"cooldown", func(d *decoder, n *yaml.Node, path string, t *Trigger) error {
		v, err := d.duration(n, path)
		t.Cooldown = v
		return err
	}},
}

// trigger decodes a trigger: its expression alone, or a mapping.
func (d *decoder) trigger(n *yaml.Node, path string) (Trigger, error) {
	n = resolve(n)
	t := Trigger{Cooldown: DefaultCooldown, Pos: d.pos(n)}
	exprNode := n
	if n.Kind == yaml.ScalarNode {
		s, err := d.str(n, path)
		if err != nil {
			return t, err
		}
		t.Expr = s
	} else {
		nodes, err := decodeMapping(d, n, path, triggerFields, &t)
		if err != nil {
			return t, err
		}
		if exprNode = nodes["expr"]; exprNode == nil {
			return t, d.failf(n, path, "no expr: give the trigger's condition, such as memory>=80%%")
		}
		path = join(path, "expr")
	}
	if err := checkTrigger(t); err != nil {
		return t, d.check(exprNode, path, err)
	}
	if d.opts.CheckTrigger != nil {
		if err := d.opts.CheckTrigger(t.Expr); err != nil {
			return t, d.check(exprNode, path, err)
		}
	}
	return t, nil
}

// groupFields are the keys of a group: every setting, then its own; the
// settings are decoded first, so that targets are resolved with them.
var groupFields = append(settingsOfGroup(), []field[Group]{
	{"name", func(d *decoder, n *yaml.Node, path string, g *Group) error {
		s, err := d.str(n, path)
		if err != nil {
			return err
		}
		if err := checkGroupName(s); err != nil {
			return d.check(n, path, err)
		}
		if first, ok := d.groupPos[s]; ok {
			return d.failf(resolve(n), path, "group %q is already defined at %s", s, first)
		}
		d.groupPos[s] = d.pos(resolve(n))
		g.Name = s
		return nil
	}},
	{"labels", func(d *decoder, n *yaml.Node, path string, g *Group) error {
		l, err := d.labels(n, path, false)
		g.Labels = l
		return err
	}},
	{"static", func(d *decoder, n *yaml.Node, path string, g *Group) error {
		items, err := d.list(n, path)
		if err != nil {
			return err
		}
		for i, item := range items {
			st := Static{}
			p := index(path, i)
			nodes, err := decodeMapping(d, item, p, staticFields, &st)
			if err != nil {
				return err
			}
			if len(st.Targets) == 0 {
				return d.failf(resolve(item), join(p, "targets"), "no targets: give URLs or host:port")
			}
			for j, raw := range st.Targets {
				tn := resolve(nodes["targets"]).Content[j]
				if err := d.addTarget(raw, g, tn, index(join(p, "targets"), j)); err != nil {
					return err
				}
				st.pos = append(st.pos, d.pos(resolve(tn)))
			}
			g.Static = append(g.Static, st)
		}
		return nil
	}},
	{"file_sd", func(d *decoder, n *yaml.Node, path string, g *Group) error {
		items, err := d.list(n, path)
		if err != nil {
			return err
		}
		for i, item := range items {
			sd := FileSD{RefreshInterval: DefaultRefreshInterval}
			p := index(path, i)
			if _, err := decodeMapping(d, item, p, fileSDFields, &sd); err != nil {
				return err
			}
			if len(sd.Files) == 0 {
				return d.failf(resolve(item), join(p, "files"), "no files: give paths or patterns of .json or .yaml files")
			}
			for j, f := range sd.Files {
				if !filepath.IsAbs(f) {
					sd.Files[j] = filepath.Join(d.dir, f)
				}
			}
			g.FileSD = append(g.FileSD, sd)
		}
		return nil
	}},
	{"kubernetes", func(d *decoder, n *yaml.Node, path string, g *Group) error {
		k := &Kubernetes{Pos: d.pos(resolve(n))}
		if resolve(n).Kind != yaml.MappingNode && !isNull(resolve(n)) {
			return d.failf(resolve(n), path, "want a mapping of namespaces, selector, node, cgroup_root and kubeconfig, not %s", kind(resolve(n)))
		}
		if !isNull(resolve(n)) {
			if _, err := decodeMapping(d, n, path, kubernetesFields, k); err != nil {
				return err
			}
		}
		if d.opts.Pods == nil {
			return d.failf(resolve(n), path, "pod discovery is not available here")
		}
		if err := d.opts.Pods.Check(k); err != nil {
			return d.fail(resolve(n), path, err)
		}
		g.Kubernetes = k
		return nil
	}},
}...)

var kubernetesFields = []field[Kubernetes]{
	{"namespaces", func(d *decoder, n *yaml.Node, path string, k *Kubernetes) error {
		ns, nodes, err := d.strings(n, path)
		for i, s := range ns {
			if err == nil {
				err = d.check(nodes[i], index(path, i), checkNamespace(s))
			}
		}
		k.Namespaces = ns
		return err
	}},
	{"selector", func(d *decoder, n *yaml.Node, path string, k *Kubernetes) error {
		s, err := d.str(n, path)
		k.Selector = s
		return err
	}},
	{"node", func(d *decoder, n *yaml.Node, path string, k *Kubernetes) error {
		s, err := d.str(n, path)
		if err != nil {
			return err
		}
		node, err := expandEnv(s)
		k.Node = node
		return d.check(n, path, err)
	}},
	{"cgroup_root", func(d *decoder, n *yaml.Node, path string, k *Kubernetes) error {
		s, err := d.str(n, path)
		if err == nil && s != "" && !filepath.IsAbs(s) {
			err = d.failf(resolve(n), path, "%q: want an absolute path, such as /host/sys/fs/cgroup", s)
		}
		k.CgroupRoot = filepath.Clean(s)
		if s == "" {
			k.CgroupRoot = ""
		}
		return err
	}},
	{"kubeconfig", func(d *decoder, n *yaml.Node, path string, k *Kubernetes) error {
		s, err := d.str(n, path)
		if s != "" && !filepath.IsAbs(s) {
			s = filepath.Join(d.dir, s)
		}
		k.Kubeconfig = s
		return err
	}},
}

// settingsOfGroup makes the settings' fields fields of a group.
func settingsOfGroup() []field[Group] {
	out := make([]field[Group], len(settingsFields))
	for i, f := range settingsFields {
		out[i] = field[Group]{f.key, func(d *decoder, n *yaml.Node, path string, g *Group) error {
			return f.decode(d, n, path, &g.Settings)
		}}
	}
	return out
}

// group decodes one group over a copy of the defaults.
func (d *decoder) group(n *yaml.Node, path string, defaults Settings) (Group, error) {
	n = resolve(n)
	g := Group{Settings: cloneSettings(defaults), Pos: d.pos(n)}
	if n.Kind != yaml.MappingNode {
		return g, d.failf(n, path, "want a group (a mapping with name and targets), not %s", kind(n))
	}
	nodes, err := decodeMapping(d, n, path, groupFields, &g)
	if err != nil {
		return g, err
	}
	if nodes["name"] == nil {
		return g, d.failf(n, path, "no name: every group has one")
	}
	if nodes["static"] == nil && nodes["file_sd"] == nil && nodes["kubernetes"] == nil {
		return g, d.failf(n, path, "no targets: give static, file_sd or kubernetes")
	}
	if err := d.checkWindow(g.Settings, path, nodes); err != nil {
		return g, err
	}
	if g.Labels == nil {
		g.Labels = map[string]string{}
	}
	return g, nil
}

// addTarget checks a static target and that no group has it already.
func (d *decoder) addTarget(raw string, g *Group, n *yaml.Node, path string) error {
	n = resolve(n)
	u, err := parseTarget(raw, g.Settings.PprofPath)
	if err != nil {
		return d.fail(n, path, err)
	}
	key := targetKey(u, g.Settings.PprofPath)
	if first, ok := d.seen[key]; ok {
		return d.failf(n, path, "%s is already a target at %s", key, first)
	}
	d.seen[key] = d.pos(n) + " (" + path + ")"
	return nil
}

var staticFields = []field[Static]{
	{"targets", func(d *decoder, n *yaml.Node, path string, st *Static) error {
		ts, _, err := d.strings(n, path)
		st.Targets = ts
		return err
	}},
	{"labels", func(d *decoder, n *yaml.Node, path string, st *Static) error {
		l, err := d.labels(n, path, false)
		st.Labels = l
		return err
	}},
}

var fileSDFields = []field[FileSD]{
	{"files", func(d *decoder, n *yaml.Node, path string, sd *FileSD) error {
		files, nodes, err := d.strings(n, path)
		if err != nil {
			return err
		}
		for i, f := range files {
			if err := checkSDPattern(f); err != nil {
				return d.fail(nodes[i], index(path, i), err)
			}
		}
		sd.Files = files
		return nil
	}},
	{"refresh_interval", func(d *decoder, n *yaml.Node, path string, sd *FileSD) error {
		v, err := d.duration(n, path)
		if err != nil {
			return err
		}
		sd.RefreshInterval = v
		return d.check(n, path, positive(v))
	}},
}

func cloneSettings(s Settings) Settings {
	s.Profiles = slices.Clone(s.Profiles)
	s.Triggers = slices.Clone(s.Triggers)
	return s
}
