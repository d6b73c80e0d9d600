package bench

import (
	"encoding/json"
	"math"

	"github.com/heapscope/heapscope/internal/gate"
)

// MarshalJSON encodes the report as bench compare --format json prints
// it: snake_case keys, warnings as strings, non-finite numbers (an
// interval with too few runs, a change from 0) as null.
func (r *Report) MarshalJSON() ([]byte, error) {
	return json.Marshal(toJSON(r))
}

type jsonReport struct {
	Old          string         `json:"old"`
	New          string         `json:"new"`
	Alpha        float64        `json:"alpha"`
	Confidence   float64        `json:"confidence"`
	MinRuns      int            `json:"min_runs"`
	Failed       bool           `json:"failed"`
	Tables       []jsonTable    `json:"tables"`
	Gates        []string       `json:"gates"`
	Decisions    []jsonDecision `json:"decisions"`
	Attributions []Attribution  `json:"attributions,omitempty"`
	Warnings     []string       `json:"warnings"`
	Errors       []string       `json:"errors,omitempty"`
}

type jsonConfig struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

type jsonTable struct {
	Config  []jsonConfig `json:"config"`
	Unit    string       `json:"unit"`
	Better  string       `json:"better"`
	Summary string       `json:"summary"`
	Rows    []jsonRow    `json:"rows"`
	Geomean *jsonGeomean `json:"geomean,omitempty"`
}

type jsonRow struct {
	Name     string       `json:"name"`
	Old      *jsonSummary `json:"old"`
	New      *jsonSummary `json:"new"`
	Delta    *jsonDelta   `json:"delta"`
	Warnings []string     `json:"warnings,omitempty"`
}

type jsonSummary struct {
	Center   float64   `json:"center"`
	Lo       *float64  `json:"lo"`
	Hi       *float64  `json:"hi"`
	Range    string    `json:"range"`
	N        int       `json:"n"`
	Iters    int       `json:"iters"`
	Values   []float64 `json:"values"`
	Warnings []string  `json:"warnings,omitempty"`
}

type jsonDelta struct {
	Absolute    *float64 `json:"absolute"`
	Relative    *float64 `json:"relative"`
	P           float64  `json:"p"`
	N1          int      `json:"n_old"`
	N2          int      `json:"n_new"`
	Alpha       float64  `json:"alpha"`
	Significant bool     `json:"significant"`
	Text        string   `json:"text"`
	Warnings    []string `json:"warnings,omitempty"`
}

type jsonGeomean struct {
	Old      *float64 `json:"old"`
	New      *float64 `json:"new"`
	Ratio    *float64 `json:"ratio"`
	Warnings []string `json:"warnings,omitempty"`
}

type jsonDecision struct {
	Gate        string       `json:"gate"`
	Benchmark   string       `json:"benchmark"`
	Config      []jsonConfig `json:"config"`
	Unit        string       `json:"unit"`
	Old         float64      `json:"old"`
	New         float64      `json:"new"`
	Change      *float64     `json:"change"`
	Relative    bool         `json:"relative"`
	P           float64      `json:"p"`
	N1          int          `json:"n_old"`
	N2          int          `json:"n_new"`
	Significant bool         `json:"significant"`
	Beyond      bool         `json:"beyond"`
	Outcome     gate.Outcome `json:"outcome"`
	Reason      string       `json:"reason"`
}

func toJSON(r *Report) jsonReport {
	out := jsonReport{
		Old: r.Old, New: r.New, Alpha: r.Alpha, Confidence: r.Confidence, MinRuns: r.MinRuns,
		Failed:       r.Failed(),
		Tables:       []jsonTable{},
		Gates:        append([]string{}, r.Gates...),
		Decisions:    []jsonDecision{},
		Attributions: r.Attributions,
		Warnings:     strs(r.Warnings),
		Errors:       strs(r.Errors),
	}
	if out.Warnings == nil {
		out.Warnings = []string{}
	}
	for _, t := range r.Tables {
		jt := jsonTable{Config: configJSON(t.Config), Unit: t.Unit, Better: better(t.Better), Summary: t.Summary, Rows: []jsonRow{}}
		for _, row := range t.Rows {
			jr := jsonRow{Name: row.Name, Old: summaryJSON(row.Old), New: summaryJSON(row.New), Warnings: strs(row.Warnings)}
			if d := row.Delta; d != nil {
				jr.Delta = &jsonDelta{
					Absolute: finite(d.Absolute), Relative: finite(d.Relative),
					P: d.P, N1: d.N1, N2: d.N2, Alpha: d.Alpha,
					Significant: d.Significant, Text: d.Text, Warnings: strs(d.Warnings),
				}
			}
			jt.Rows = append(jt.Rows, jr)
		}
		if g := t.Geomean; g != nil {
			jg := &jsonGeomean{Warnings: strs(g.Warnings)}
			if g.HasOld {
				jg.Old = finite(g.Old)
			}
			if g.HasNew {
				jg.New = finite(g.New)
			}
			if g.HasRatio {
				jg.Ratio = finite(g.Ratio)
			}
			jt.Geomean = jg
		}
		out.Tables = append(out.Tables, jt)
	}
	for _, d := range r.Decisions {
		out.Decisions = append(out.Decisions, jsonDecision{
			Gate: d.Gate, Benchmark: d.Benchmark, Config: configJSON(d.Config), Unit: d.Unit,
			Old: d.Old, New: d.New, Change: finite(d.Change), Relative: d.Relative,
			P: d.P, N1: d.N1, N2: d.N2,
			Significant: d.Significant, Beyond: d.Beyond, Outcome: d.Outcome, Reason: d.Reason,
		})
	}
	return out
}

func summaryJSON(s *Summary) *jsonSummary {
	if s == nil {
		return nil
	}
	return &jsonSummary{
		Center: s.Center, Lo: finite(s.Lo), Hi: finite(s.Hi), Range: s.Range,
		N: s.N, Iters: s.Iters, Values: s.Values, Warnings: strs(s.Warnings),
	}
}

func configJSON(c []ConfigValue) []jsonConfig {
	out := make([]jsonConfig, len(c))
	for i, kv := range c {
		out[i] = jsonConfig{Key: kv.Key, Value: kv.Value}
	}
	return out
}

func better(b int) string {
	switch {
	case b > 0:
		return "higher"
	case b < 0:
		return "lower"
	}
	return "unknown"
}

func strs(errs []error) []string {
	if len(errs) == 0 {
		return nil
	}
	out := make([]string, len(errs))
	for i, e := range errs {
		out[i] = e.Error()
	}
	return out
}

// finite returns a pointer to v, or nil when v is not finite (JSON has no
// infinities).
func finite(v float64) *float64 {
	if math.IsInf(v, 0) || math.IsNaN(v) {
		return nil
	}
	return &v
}
