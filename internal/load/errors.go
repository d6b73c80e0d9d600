package load

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"syscall"

	"github.com/valyala/fasthttp"
)

// The kinds of error counted in Result.ErrorKinds, besides "status_4xx" and
// "status_5xx" for responses with such a status.
const (
	// ErrorKindTimeout: the request's Timeout (or a deadline of the
	// transport) expired before the whole response was read.
	ErrorKindTimeout = "timeout"
	// ErrorKindConnectionRefused: nothing listens at the target's address.
	ErrorKindConnectionRefused = "connection_refused"
	// ErrorKindConnectionReset: the peer reset the connection or the write
	// side broke.
	ErrorKindConnectionReset = "connection_reset"
	// ErrorKindConnectionClosed: the server closed the connection before a
	// whole response was read.
	ErrorKindConnectionClosed = "connection_closed"
	// ErrorKindDNS: the target's host name could not be resolved.
	ErrorKindDNS = "dns"
	// ErrorKindTLS: the TLS handshake or certificate verification failed.
	ErrorKindTLS = "tls"
	// ErrorKindBodyTooLarge: the response body exceeded Options.MaxBody.
	ErrorKindBodyTooLarge = "body_too_large"
	// ErrorKindInvalidResponse: the server's answer was not valid HTTP.
	ErrorKindInvalidResponse = "invalid_response"
	// ErrorKindCanceled: the run was stopped (its context ended) while the
	// request was outstanding.
	ErrorKindCanceled = "canceled"
	// ErrorKindUnfinished: the request was still outstanding EndGrace
	// after the window's end, and was cancelled so that the run ends on
	// time.
	ErrorKindUnfinished = "unfinished"
	// ErrorKindOther: any other transport failure.
	ErrorKindOther = "other"
)

// errorKind is an index into the recorder's counts of error kinds; 0 means
// no transport error.
type errorKind uint8

const (
	kindNone errorKind = iota
	kindTimeout
	kindRefused
	kindReset
	kindClosed
	kindDNS
	kindTLS
	kindTooLarge
	kindInvalid
	kindCanceled
	kindUnfinished
	kindOther
	kindStatus4xx
	kindStatus5xx
	numKinds
)

var kindNames = [numKinds]string{
	kindTimeout:    ErrorKindTimeout,
	kindRefused:    ErrorKindConnectionRefused,
	kindReset:      ErrorKindConnectionReset,
	kindClosed:     ErrorKindConnectionClosed,
	kindDNS:        ErrorKindDNS,
	kindTLS:        ErrorKindTLS,
	kindTooLarge:   ErrorKindBodyTooLarge,
	kindInvalid:    ErrorKindInvalidResponse,
	kindCanceled:   ErrorKindCanceled,
	kindUnfinished: ErrorKindUnfinished,
	kindOther:      ErrorKindOther,
	kindStatus4xx:  "status_4xx",
	kindStatus5xx:  "status_5xx",
}

// hasLatency reports whether a request that ended with this kind counts in
// the latency figures: it got a response (whatever its status), or it
// waited for one until it was given up (timeout, unfinished), so a service
// that answers nothing shows as slow rather than not at all. Requests that
// failed fast (refused, reset) say nothing of the service's speed.
func (k errorKind) hasLatency() bool {
	switch k {
	case kindNone, kindStatus4xx, kindStatus5xx, kindTimeout, kindUnfinished:
		return true
	}
	return false
}

// classify returns the kind of a transport failure. A failure after the
// run's context ended is a cancellation, whatever its cause.
func classify(ctx context.Context, err error) errorKind {
	if ctx.Err() != nil {
		return kindCanceled
	}
	var (
		netErr  net.Error
		dnsErr  *net.DNSError
		tlsRec  tls.RecordHeaderError
		tlsVer  *tls.CertificateVerificationError
		tlsAl   tls.AlertError
		unknown x509.UnknownAuthorityError
		badHost x509.HostnameError
		invalid x509.CertificateInvalidError
	)
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, fasthttp.ErrTimeout),
		errors.Is(err, fasthttp.ErrDialTimeout), errors.Is(err, fasthttp.ErrTLSHandshakeTimeout),
		errors.As(err, &netErr) && netErr.Timeout():
		return kindTimeout
	case errors.Is(err, syscall.ECONNREFUSED):
		return kindRefused
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return kindReset
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, fasthttp.ErrConnectionClosed):
		return kindClosed
	case errors.As(err, &dnsErr):
		return kindDNS
	case errors.As(err, &tlsRec), errors.As(err, &tlsVer), errors.As(err, &tlsAl),
		errors.As(err, &unknown), errors.As(err, &badHost), errors.As(err, &invalid):
		return kindTLS
	case errors.Is(err, fasthttp.ErrBodyTooLarge), errors.Is(err, errBodyTooLarge):
		return kindTooLarge
	case isProtocolError(err):
		return kindInvalid
	}
	return kindOther
}

// errBodyTooLarge is the HTTP/2 client's error for a body over the limit.
var errBodyTooLarge = errors.New("response body too large")

// isProtocolError reports whether err says the response was not valid HTTP.
func isProtocolError(err error) bool {
	var perr *http.ProtocolError
	if errors.As(err, &perr) {
		return true
	}
	var fe *fasthttp.ErrSmallBuffer
	if errors.As(err, &fe) {
		return true
	}
	return isFasthttpParseError(err)
}

// isFasthttpParseError reports whether err is fasthttp's error for a
// response it could not parse; it has no exported type for those.
func isFasthttpParseError(err error) bool {
	msg := err.Error()
	for _, prefix := range []string{"error when reading response headers", "cannot find http request method", "unsupported http protocol", "cannot parse"} {
		if len(msg) >= len(prefix) && msg[:len(prefix)] == prefix {
			return true
		}
	}
	return false
}
