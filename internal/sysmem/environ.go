package sysmem

import (
	"bytes"
	"math"
	"strconv"
	"strings"
)

// ParseEnviron parses the contents of /proc/PID/environ: NUL-terminated
// NAME=value entries. As in the Go runtime and the C library, the first
// entry of a name wins; entries without "=" are skipped.
func ParseEnviron(data []byte) map[string]string {
	env := make(map[string]string)
	for len(data) > 0 {
		entry := data
		if i := bytes.IndexByte(data, 0); i >= 0 {
			entry, data = data[:i], data[i+1:]
		} else {
			data = nil
		}
		eq := bytes.IndexByte(entry, '=')
		if eq < 0 {
			continue
		}
		name := string(entry[:eq])
		if _, dup := env[name]; !dup {
			env[name] = string(entry[eq+1:])
		}
	}
	return env
}

// EnvVar is the value of an environment variable and whether it is set at
// all (a variable can be set to "").
type EnvVar struct {
	Value string
	Set   bool
}

// GoEnv holds the environment variables that steer the Go runtime's memory
// and scheduling, as a process was started with.
type GoEnv struct {
	GOGC       EnvVar
	GOMEMLIMIT EnvVar
	GODEBUG    EnvVar
	GOMAXPROCS EnvVar
}

// Set returns the variables that are set, by name.
func (e GoEnv) Set() map[string]string {
	set := make(map[string]string)
	for _, v := range [...]struct {
		name string
		v    EnvVar
	}{
		{"GOGC", e.GOGC},
		{"GOMEMLIMIT", e.GOMEMLIMIT},
		{"GODEBUG", e.GODEBUG},
		{"GOMAXPROCS", e.GOMAXPROCS},
	} {
		if v.v.Set {
			set[v.name] = v.v.Value
		}
	}
	return set
}

// GoEnv reads the Go runtime's settings from /proc/PID/environ. The file
// holds the environment the process was started with: changes the process
// made later (os.Setenv, debug.SetGCPercent, debug.SetMemoryLimit) are not
// in it. Reading another user's process needs the rights to ptrace it; the
// error then matches fs.ErrPermission.
func (p Proc) GoEnv(pid int) (GoEnv, error) {
	data, _, err := p.readPID(pid, "environ")
	if err != nil {
		return GoEnv{}, err
	}
	env := ParseEnviron(data)
	get := func(name string) EnvVar {
		v, ok := env[name]
		return EnvVar{Value: v, Set: ok}
	}
	return GoEnv{
		GOGC:       get("GOGC"),
		GOMEMLIMIT: get("GOMEMLIMIT"),
		GODEBUG:    get("GODEBUG"),
		GOMAXPROCS: get("GOMAXPROCS"),
	}, nil
}

// MemoryLimit returns the limit GOMEMLIMIT sets, in bytes, as the Go
// runtime reads it at start (see ParseGoMemLimit); false when the variable
// is unset, empty, "off" or malformed (a runtime given a malformed
// GOMEMLIMIT refuses to start).
func (e GoEnv) MemoryLimit() (uint64, bool) {
	if !e.GOMEMLIMIT.Set {
		return 0, false
	}
	return ParseGoMemLimit(e.GOMEMLIMIT.Value)
}

// ParseGoMemLimit parses a GOMEMLIMIT value as the Go runtime does: a
// non-negative decimal number of bytes with an optional unit, B, KiB, MiB,
// GiB or TiB, no blanks, at most math.MaxInt64 bytes. It reports false for
// "", "off" and math.MaxInt64 (the runtime's "no limit") and for anything
// malformed.
func ParseGoMemLimit(s string) (uint64, bool) {
	num, shift := s, uint(0)
	for _, u := range [...]struct {
		suffix string
		shift  uint
	}{{"KiB", 10}, {"MiB", 20}, {"GiB", 30}, {"TiB", 40}, {"B", 0}} {
		if n, ok := strings.CutSuffix(s, u.suffix); ok {
			num, shift = n, u.shift
			break
		}
	}
	if num == "" || num[len(num)-1] < '0' || num[len(num)-1] > '9' {
		return 0, false
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n < 0 || uint64(n) > math.MaxInt64>>shift {
		return 0, false
	}
	v := uint64(n) << shift
	if v == math.MaxInt64 {
		return 0, false
	}
	return v, true
}
