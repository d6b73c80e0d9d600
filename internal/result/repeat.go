package result

// WindowsDir is the directory of a repeated run that holds its windows,
// each under windows/NNN/ with the layout of a run.
const WindowsDir = "windows"

// Repeat summarises a run recorded as several consecutive windows. The
// top-level result.json of such a run holds, in its memstats, rss, load and
// per_request sections, the median of each headline figure across the
// windows that were collected; Figures has the medians with their ranges.
type Repeat struct {
	// Count is the number of windows asked for.
	Count   int            `json:"count"`
	Windows []RepeatWindow `json:"windows"`
	// Figures summarises each headline figure over the windows that have
	// it, by its JSON name (see Figures).
	Figures map[string]FigureSummary `json:"figures"`
}

// RepeatWindow is one window of a repeated run.
type RepeatWindow struct {
	// Path is the window's directory, relative to the run's.
	Path   string `json:"path"`
	Status Status `json:"status"`
	// Error says why a failed window has no result.
	Error string `json:"error,omitempty"`
}

// FigureSummary is a figure's median and range over the windows of a
// repeated run.
type FigureSummary struct {
	Median float64 `json:"median"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
	// N counts the windows that have the figure.
	N int `json:"n"`
}
