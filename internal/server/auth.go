package server

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"

	"golang.org/x/crypto/bcrypt"
)

// minTokenLen is the shortest bearer token accepted in a tokens file: 128
// bits in hex, what `openssl rand -hex 16` prints.
const minTokenLen = 32

// Auth checks the credentials of requests: bearer tokens, or users with
// bcrypt passwords (an htpasswd file), or both. Nothing is kept in the
// browser but what it keeps for Basic authentication itself: no cookies.
type Auth struct {
	tokens [][sha256.Size]byte // digests: compared in constant time
	users  map[string][]byte   // name → bcrypt hash
}

// LoadTokens reads a tokens file into a: one token per line, blank lines
// and lines starting with # ignored; each at least 32 characters.
func (a *Auth) LoadTokens(path string) error {
	return eachLine(path, func(n int, line string) error {
		if len(line) < minTokenLen || strings.ContainsAny(line, " \t") {
			return fmt.Errorf("%s:%d: a token is one word of at least %d characters (openssl rand -hex 16)", path, n, minTokenLen)
		}
		a.tokens = append(a.tokens, sha256.Sum256([]byte(line)))
		return nil
	})
}

// LoadHtpasswd reads an htpasswd file of bcrypt passwords into a (htpasswd
// -B): user:$2y$…, one a line. Other schemes (MD5, SHA-1, crypt) are
// refused: they are too fast to guess against.
func (a *Auth) LoadHtpasswd(path string) error {
	return eachLine(path, func(n int, line string) error {
		user, hash, ok := strings.Cut(line, ":")
		if !ok || user == "" {
			return fmt.Errorf("%s:%d: want user:bcrypt-hash", path, n)
		}
		if _, err := bcrypt.Cost([]byte(hash)); err != nil {
			return fmt.Errorf("%s:%d: user %s: not a bcrypt hash (create it with htpasswd -B)", path, n, user)
		}
		if a.users == nil {
			a.users = map[string][]byte{}
		}
		if _, dup := a.users[user]; dup {
			return fmt.Errorf("%s:%d: user %s is given twice", path, n, user)
		}
		a.users[user] = []byte(hash)
		return nil
	})
}

// Empty reports whether a holds no credential.
func (a *Auth) Empty() bool { return a == nil || len(a.tokens) == 0 && len(a.users) == 0 }

// eachLine calls fn with each line of a file that is not blank or a
// comment, trimmed, and its number.
func eachLine(path string, fn func(n int, line string) error) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("read credentials: %w", err)
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	n, kept := 0, 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if err := fn(n, line); err != nil {
			return err
		}
		kept++
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("read credentials %s: %w", path, err)
	}
	if kept == 0 {
		return fmt.Errorf("%s holds no credential", path)
	}
	return nil
}

// allows reports whether r carries a valid credential.
func (a *Auth) allows(r *http.Request) bool {
	scheme, token, _ := strings.Cut(r.Header.Get("Authorization"), " ")
	if strings.EqualFold(scheme, "Bearer") {
		sum := sha256.Sum256([]byte(strings.TrimSpace(token)))
		found := 0
		for i := range a.tokens {
			found |= subtle.ConstantTimeCompare(sum[:], a.tokens[i][:])
		}
		return found == 1
	}
	if user, pass, ok := r.BasicAuth(); ok && len(a.users) > 0 {
		hash, known := a.users[user]
		if !known {
			// Spend the same time as for a known user: the answer's
			// delay must not say which names exist.
			bcrypt.CompareHashAndPassword(dummyHash(), []byte(pass))
			return false
		}
		return bcrypt.CompareHashAndPassword(hash, []byte(pass)) == nil
	}
	return false
}

// dummyHash is a bcrypt hash of nothing anyone types, at the default
// cost, made when first needed: every command would pay for it at start.
var dummyHash = sync.OnceValue(func() []byte {
	h, _ := bcrypt.GenerateFromPassword([]byte("heapscope: no such user"), bcrypt.DefaultCost)
	return h
})

// require puts a's check in front of h: a request without a valid
// credential gets 401 and the challenges a browser and a script answer.
func (a *Auth) require(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !a.allows(r) {
			if len(a.users) > 0 {
				w.Header().Add("WWW-Authenticate", `Basic realm="heapscope", charset="UTF-8"`)
			}
			if len(a.tokens) > 0 {
				w.Header().Add("WWW-Authenticate", `Bearer realm="heapscope"`)
			}
			writeError(w, http.StatusUnauthorized, errors.New("authentication required"))
			return
		}
		h.ServeHTTP(w, r)
	})
}

// CheckListen refuses to serve on an address other than loopback without
// credentials: the stored profiles name a fleet's code and its load.
func CheckListen(addr string, auth *Auth) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("listen address %q: want HOST:PORT, such as 127.0.0.1:7070", addr)
	}
	if isLoopback(host) || !auth.Empty() {
		return nil
	}
	return fmt.Errorf("listen address %s is not loopback: give --auth-tokens FILE or --htpasswd FILE so that only people with credentials read the store", addr)
}

// isLoopback reports whether host is this machine's loopback only.
func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Credentials loads the credential files a command line names, either
// of which may be empty; nil when it names none.
func Credentials(tokensFile, htpasswdFile string) (*Auth, error) {
	if tokensFile == "" && htpasswdFile == "" {
		return nil, nil
	}
	a := &Auth{}
	if tokensFile != "" {
		if err := a.LoadTokens(tokensFile); err != nil {
			return nil, fmt.Errorf("--auth-tokens: %w", err)
		}
	}
	if htpasswdFile != "" {
		if err := a.LoadHtpasswd(htpasswdFile); err != nil {
			return nil, fmt.Errorf("--htpasswd: %w", err)
		}
	}
	return a, nil
}

// LoopbackAddr reports whether addr (HOST:PORT) listens on loopback only.
func LoopbackAddr(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	return err == nil && isLoopback(host)
}

// CheckCredentials reads the credential files and checks that addr may be
// served with them (CheckListen): what a command checks before it starts
// anything. No address needs none.
func CheckCredentials(addr, tokensFile, htpasswdFile string) error {
	if addr == "" {
		return nil
	}
	auth, err := Credentials(tokensFile, htpasswdFile)
	if err != nil {
		return err
	}
	if err := CheckListen(addr, auth); err != nil {
		return fmt.Errorf("--listen: %w", err)
	}
	return nil
}
