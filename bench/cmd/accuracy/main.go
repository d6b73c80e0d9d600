// Command accuracy turns the outcomes the end-to-end cases record (JSON
// lines, one per case, written when HEAPSCOPE_ACCURACY names a file) into
// the accuracy table of docs/findings.md: per case what was expected,
// found and missed, and the false alarms, with the totals. bench/accuracy.sh
// runs the cases and then this.
//
//	accuracy -in outcomes.jsonl               # print the table
//	accuracy -in outcomes.jsonl -w docs/findings.md
//
// With -w it replaces the text between the lines "<!-- accuracy:begin -->"
// and "<!-- accuracy:end -->" of the file, and fails when they are missing.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"sort"
	"strings"
)

// record is one case's outcome (cmd/heapscope's accuracyRecord).
type record struct {
	Case        string   `json:"case"`
	Expected    []string `json:"expected"`
	Found       []string `json:"found"`
	Missed      []string `json:"missed"`
	FalseAlarms []string `json:"false_alarms"`
}

const begin, end = "<!-- accuracy:begin -->", "<!-- accuracy:end -->"

func main() {
	in := flag.String("in", "", "the JSON lines the cases recorded")
	write := flag.String("w", "", "a Markdown file whose accuracy section to replace")
	flag.Parse()
	if err := run(*in, *write); err != nil {
		fmt.Fprintln(os.Stderr, "accuracy:", err)
		os.Exit(1)
	}
}

func run(in, write string) error {
	if in == "" {
		return errors.New("give -in FILE: the outcomes the cases recorded")
	}
	recs, err := read(in)
	if err != nil {
		return err
	}
	table := render(recs)
	if write == "" {
		_, err := os.Stdout.WriteString(table)
		return err
	}
	doc, err := os.ReadFile(write)
	if err != nil {
		return err
	}
	i, j := bytes.Index(doc, []byte(begin)), bytes.Index(doc, []byte(end))
	if i < 0 || j < i {
		return fmt.Errorf("%s has no %q … %q section", write, begin, end)
	}
	var out bytes.Buffer
	out.Write(doc[:i+len(begin)])
	out.WriteString("\n" + table)
	out.Write(doc[j:])
	tmp := write + ".tmp"
	if err := os.WriteFile(tmp, out.Bytes(), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, write)
}

func read(path string) ([]record, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var recs []record
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	for n := 1; sc.Scan(); n++ {
		var r record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, n, err)
		}
		recs = append(recs, r)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(recs) == 0 {
		return nil, fmt.Errorf("%s holds no outcome: did the cases run with HEAPSCOPE_ACCURACY set?", path)
	}
	sort.SliceStable(recs, func(a, b int) bool { return recs[a].Case < recs[b].Case })
	return recs, nil
}

func render(recs []record) string {
	var b strings.Builder
	b.WriteString("| case | expected | found | missed | false alarms |\n|---|---|---|---|---|\n")
	var expected, found, alarms, quiet int
	for _, r := range recs {
		exp := "nothing of medium or above"
		if len(r.Expected) > 0 {
			exp = strings.Join(r.Expected, "; ")
		} else {
			quiet++
		}
		fmt.Fprintf(&b, "| %s | %s | %d | %s | %s |\n", r.Case, exp, len(r.Found), list(r.Missed), list(r.FalseAlarms))
		expected += len(r.Expected)
		found += len(r.Found)
		alarms += len(r.FalseAlarms)
	}
	fmt.Fprintf(&b, "| **%d cases** | %d expected findings, %d quiet runs | **%d** | **%d** | **%d** |\n",
		len(recs), expected, quiet, found, expected-found, alarms)
	return b.String()
}

func list(xs []string) string {
	if len(xs) == 0 {
		return "none"
	}
	return strings.Join(xs, "; ")
}
