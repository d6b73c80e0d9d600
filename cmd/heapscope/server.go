package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/heapscope/heapscope/internal/server"
)

func newServerCmd(e *env) *cobra.Command {
	cfg := &server.Config{}
	cmd := &cobra.Command{
		Use:   "server",
		Short: "Serve a watch store's history over HTTP: a JSON API of targets, series, runs and findings",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return server.Run(cmd.Context(), *cfg, func(url string) {
				fmt.Fprintf(e.stdout, "serving the store on %s (Ctrl-C stops)\n", url)
			})
		},
	}
	fs := cmd.Flags()
	storeFlags(fs, &cfg.Location, "store `DIR` that watch fills (or --postgres and --objects)")
	fs.StringVar(&cfg.Listen, "listen", "127.0.0.1:7070", "`ADDR` to serve on; other than loopback only with credentials")
	fs.StringVar(&cfg.TokensFile, "auth-tokens", "", "require a bearer token of `FILE` (one a line) of every request")
	fs.StringVar(&cfg.HtpasswdFile, "htpasswd", "", "require a user and password of `FILE` (htpasswd -B, bcrypt) of every request")
	return withHelp(cmd, "server")
}
