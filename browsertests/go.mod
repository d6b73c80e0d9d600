module github.com/heapscope/heapscope/browsertests

go 1.26.0

require (
	github.com/chromedp/chromedp v0.23.0
	github.com/heapscope/heapscope v0.0.0
	golang.org/x/net v0.61.0
)

require (
	github.com/chromedp/cdproto v0.159.0 // indirect
	github.com/go-json-experiment/json v0.0.0-20260213210345-44df1a37e875 // indirect
	github.com/google/pprof v0.0.0-20260906184651-6331bc6350fe // indirect
)

replace github.com/heapscope/heapscope => ../
