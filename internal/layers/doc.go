// Package layers holds heapscope's import rules and the test that keeps
// them: data types at the bottom, analyses and readers above them, the
// renderers above those, the collector and the web UI next, the command on
// top. docs/architecture.md draws the same layers. TestCommandIsThin
// bounds the command's size, so that what it does stays in the layers
// below.
package layers
