package service

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"runtime"
	"strconv"
	"strings"
)

// Exit codes of an example's command.
const (
	ExitOK      = 0 // served and shut down gracefully, or printed --help
	ExitFailure = 1 // serving failed
	ExitUsage   = 2 // bad flags, environment or options
)

// Command is the command line of one example service: the flags --addr and
// --mutex-profile-fraction, the service's own options, each flag falling back
// to an environment variable, and the serving loop.
type Command struct {
	// Name names the program in messages and metrics and prefixes its
	// environment variables: "leakycache" reads LEAKYCACHE_ADDR.
	Name string
	// Addr is the default of --addr.
	Addr string
	// MutexProfileFraction is the default of --mutex-profile-fraction,
	// passed to runtime.SetMutexProfileFraction.
	MutexProfileFraction int
	// Options registers the service's own flags on fs (validating their
	// values in the flags themselves, as IntFlag does) and returns the
	// function that builds the service's handler, its own routes only, from
	// the parsed values. An error from that function is a usage error.
	Options func(fs *flag.FlagSet) func() (http.Handler, error)
}

// Handler returns the whole service (its routes and those of NewMux) built
// with every option at its default.
func (c Command) Handler() (http.Handler, error) {
	fs := flag.NewFlagSet(c.Name, flag.ContinueOnError)
	build := c.options(fs)
	h, err := build()
	if err != nil {
		return nil, fmt.Errorf("build %s: %w", c.Name, err)
	}
	return NewMux(c.Name, h), nil
}

// Run parses args (falling back to the environment through getenv for each
// flag not given), builds the service and serves it until ctx is cancelled.
// Once listening it writes "NAME: listening on http://ADDR" to stderr, where
// ADDR is the address bound. Errors are written to stderr as one line. Run
// returns an exit code: ExitOK, ExitUsage or ExitFailure.
func (c Command) Run(ctx context.Context, args []string, getenv func(string) string, stderr io.Writer) int {
	fs := flag.NewFlagSet(c.Name, flag.ContinueOnError)
	addr := AddrFlag(fs, "addr", c.Addr, "`address` to listen on, host:port (port 0 picks a free port)")
	mutexFraction := IntFlag(fs, "mutex-profile-fraction", c.MutexProfileFraction, 0, math.MaxInt32,
		"report 1 in `N` mutex contention events in the mutex profile (0 turns it off)")
	build := c.options(fs)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: %s [flags]\n\nEach flag can also be set by the environment variable %s_FLAG_NAME (--addr by %s).\n\nflags:\n",
			c.Name, EnvPrefix(c.Name), EnvName(c.Name, "addr"))
		fs.PrintDefaults()
	}

	fail := func(code int, err error) int {
		fmt.Fprintf(stderr, "%s: %v\n", c.Name, err)
		return code
	}
	if err := ParseFlags(fs, args, c.Name, getenv); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(stderr)
			fs.Usage()
			return ExitOK
		}
		return fail(ExitUsage, fmt.Errorf("%w (see --help)", err))
	}
	h, err := build()
	if err != nil {
		return fail(ExitUsage, err)
	}

	runtime.SetMutexProfileFraction(*mutexFraction)
	err = Serve(ctx, *addr, NewMux(c.Name, h), func(a net.Addr) {
		fmt.Fprintf(stderr, "%s: listening on http://%s\n", c.Name, a)
	})
	if err != nil {
		return fail(ExitFailure, err)
	}
	return ExitOK
}

func (c Command) options(fs *flag.FlagSet) func() (http.Handler, error) {
	if c.Options == nil {
		return func() (http.Handler, error) { return nil, errors.New("no service options defined") }
	}
	return c.Options(fs)
}

// EnvPrefix returns the prefix of a command's environment variables: its
// name in upper case, non-alphanumerics turned into underscores.
func EnvPrefix(name string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z':
			return r - 'a' + 'A'
		case r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
			return r
		default:
			return '_'
		}
	}, name)
}

// EnvName returns the environment variable of a command's flag:
// EnvName("leakycache", "mutex-profile-fraction") is
// LEAKYCACHE_MUTEX_PROFILE_FRACTION.
func EnvName(command, flagName string) string {
	return EnvPrefix(command) + "_" + EnvPrefix(flagName)
}

// ParseFlags parses args into fs, then sets every flag that args did not give
// from its environment variable (see EnvName) when getenv returns a non-empty
// value for it. Positional arguments are an error. The flag set's own error
// output is silenced: the returned error is one line, flag.ErrHelp for -h.
func ParseFlags(fs *flag.FlagSet, args []string, command string, getenv func(string) string) error {
	out, usage := fs.Output(), fs.Usage
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	err := fs.Parse(args)
	fs.SetOutput(out)
	fs.Usage = usage
	if err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}

	given := make(map[string]bool)
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	var errs []error
	fs.VisitAll(func(f *flag.Flag) {
		if given[f.Name] || getenv == nil {
			return
		}
		env := EnvName(command, f.Name)
		v := getenv(env)
		if v == "" {
			return
		}
		if err := fs.Set(f.Name, v); err != nil {
			errs = append(errs, fmt.Errorf("invalid value %q for %s: %w", v, env, err))
		}
	})
	if len(errs) > 0 {
		return errs[0]
	}
	return nil
}

// IntFlag defines an int flag whose values must lie in [min, max]; a value
// out of range is an error of fs.Parse or fs.Set, which name the flag or the
// environment variable. The default is not checked.
func IntFlag(fs *flag.FlagSet, name string, value, min, max int, usage string) *int {
	v := &intValue{v: value, min: min, max: max}
	fs.Var(v, name, usage)
	return &v.v
}

type intValue struct{ v, min, max int }

func (v *intValue) String() string {
	if v == nil {
		return "0"
	}
	return strconv.Itoa(v.v)
}

func (v *intValue) Set(s string) error {
	n, err := strconv.Atoi(s)
	if err != nil {
		return errors.New("not an integer")
	}
	switch {
	case n < v.min && v.max == math.MaxInt:
		return fmt.Errorf("must be at least %d", v.min)
	case n < v.min || n > v.max:
		return fmt.Errorf("must be from %d to %d", v.min, v.max)
	}
	v.v = n
	return nil
}

// AddrFlag defines a string flag holding a TCP listen address, checked by
// ValidateAddr when set. The default is not checked.
func AddrFlag(fs *flag.FlagSet, name, value, usage string) *string {
	v := &addrValue{v: value}
	fs.Var(v, name, usage)
	return &v.v
}

type addrValue struct{ v string }

func (v *addrValue) String() string {
	if v == nil {
		return ""
	}
	return v.v
}

func (v *addrValue) Set(s string) error {
	if err := ValidateAddr(s); err != nil {
		return err
	}
	v.v = s
	return nil
}

// ValidateAddr checks that addr is a TCP listen address host:port with a
// numeric port from 0 to 65535; the host may be empty (all interfaces), an IP
// address or a name.
func ValidateAddr(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		var ae *net.AddrError
		if errors.As(err, &ae) {
			return errors.New(ae.Err)
		}
		return err
	}
	if strings.ContainsAny(host, " /\\") {
		return fmt.Errorf("invalid host %q", host)
	}
	if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		return fmt.Errorf("port %q is not a number from 0 to 65535", port)
	}
	return nil
}
