// Package report renders runs for people: the terminal summary, report.md,
// and tables of top sites in text, Markdown and JSON. It is pure: values in,
// bytes out to an io.Writer. Figures are worded by internal/humanize.
package report
