package client

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/listwatch/listwatch/wire"
)

// maxErrorBody caps how much of an error response is read.
const maxErrorBody = 1 << 20

// statusError turns a non-2xx response into a *wire.Status. A body that is
// a Status is used as sent (its code filled in from the response when
// missing); any other body becomes the message of a Status synthesized
// from the HTTP code, as client-go's NewGenericServerResponse does.
func statusError(resp *http.Response) *wire.Status {
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	var st wire.Status
	if protobufStatus(resp, body, &st) || json.Unmarshal(body, &st) == nil && st.Kind == "Status" {
		if st.Code == 0 {
			st.Code = int32(resp.StatusCode)
		}
		if st.Status == "" {
			st.Status = wire.StatusFailure
		}
		// The header counts when the body does not say: kube's 429 from
		// its max-in-flight filter carries Retry-After in the header only.
		if st.Details == nil || st.Details.RetryAfterSeconds == 0 {
			if n, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && n > 0 {
				if st.Details == nil {
					st.Details = &wire.StatusDetails{}
				}
				st.Details.RetryAfterSeconds = int32(n)
			}
		}
		return &st
	}
	return synthesizeStatus(resp.StatusCode, strings.TrimSpace(string(body)), resp.Header.Get("Retry-After"))
}

func synthesizeStatus(code int, body, retryAfter string) *wire.Status {
	reason, msg := reasonForCode(code)
	if body != "" {
		msg = body
	}
	st := &wire.Status{
		TypeMeta: wire.TypeMeta{APIVersion: "v1", Kind: "Status"},
		Status:   wire.StatusFailure,
		Message:  msg,
		Reason:   reason,
		Code:     int32(code),
	}
	if n, err := strconv.Atoi(retryAfter); err == nil && n >= 0 {
		st.Details = &wire.StatusDetails{RetryAfterSeconds: int32(n)}
	}
	return st
}

func reasonForCode(code int) (wire.StatusReason, string) {
	switch code {
	case http.StatusBadRequest:
		return wire.ReasonBadRequest, "the server rejected our request for an unknown reason"
	case http.StatusUnauthorized:
		return wire.ReasonUnauthorized, "the server has asked for the client to provide credentials"
	case http.StatusForbidden:
		return wire.ReasonForbidden, "the server does not allow access to the requested resource"
	case http.StatusNotFound:
		return wire.ReasonNotFound, "the server could not find the requested resource"
	case http.StatusMethodNotAllowed:
		return wire.ReasonMethodNotAllowed, "the server does not allow this method on the requested resource"
	case http.StatusNotAcceptable:
		return wire.ReasonNotAcceptable, "the server was unable to respond with a content type that the client supports"
	case http.StatusConflict:
		return wire.ReasonConflict, "the server reported a conflict"
	case http.StatusGone:
		return wire.ReasonGone, "the server has asked for the client to retry with a fresh resourceVersion"
	case http.StatusRequestEntityTooLarge:
		return wire.ReasonRequestEntityTooLarge, "the server has rejected the request because it is too large"
	case http.StatusUnsupportedMediaType:
		return wire.ReasonUnsupportedMediaType, "the server was unable to handle the media type of the request"
	case http.StatusUnprocessableEntity:
		return wire.ReasonInvalid, "the server rejected our request due to an error in our request"
	case http.StatusTooManyRequests:
		return wire.ReasonTooManyRequests, "the server has received too many requests and has asked us to try again later"
	case http.StatusInternalServerError:
		return wire.ReasonInternalError, "an error on the server has prevented the request from succeeding"
	case http.StatusServiceUnavailable:
		return wire.ReasonServiceUnavailable, "the server is currently unable to handle the request"
	case http.StatusGatewayTimeout:
		return wire.ReasonTimeout, "the server was unable to return a response in the time allotted, but may still be processing the request"
	}
	return wire.ReasonUnknown, "an error on the server (" + strconv.Itoa(code) + ") has prevented the request from succeeding"
}

// statusOf finds the *wire.Status in err's chain.
func statusOf(err error) (*wire.Status, bool) {
	var st *wire.Status
	ok := errors.As(err, &st)
	return st, ok
}

// knownReason says whether r is one of the reasons apimachinery's
// api/errors knows (its knownReasons; "" is not one of them). A Status
// with any other reason, such as the free text of an admission webhook's
// denial, is classified by its HTTP code.
func knownReason(r wire.StatusReason) bool {
	switch r {
	case wire.ReasonUnauthorized, wire.ReasonForbidden, wire.ReasonNotFound,
		wire.ReasonAlreadyExists, wire.ReasonConflict, wire.ReasonGone,
		wire.ReasonInvalid, wire.ReasonServerTimeout, wire.ReasonStoreReadError,
		wire.ReasonTimeout, wire.ReasonTooManyRequests, wire.ReasonBadRequest,
		wire.ReasonMethodNotAllowed, wire.ReasonNotAcceptable,
		wire.ReasonRequestEntityTooLarge, wire.ReasonUnsupportedMediaType,
		wire.ReasonInternalError, wire.ReasonExpired, wire.ReasonServiceUnavailable:
		return true
	}
	return false
}

// isReason says whether err is a Status with one of reasons, or one
// whose reason is not a known one (knownReason) with the HTTP code given
// (0: no code fallback). This is how apimachinery's Is functions decide.
func isReason(err error, code int32, reasons ...wire.StatusReason) bool {
	st, ok := statusOf(err)
	if !ok {
		return false
	}
	for _, r := range reasons {
		if st.Reason == r {
			return true
		}
	}
	return code != 0 && st.Code == code && !knownReason(st.Reason)
}

// isReasonOrCode says whether err is a Status with reason or with code,
// whatever its reason: apimachinery's rule for 429 and 413.
func isReasonOrCode(err error, code int32, reason wire.StatusReason) bool {
	st, ok := statusOf(err)
	return ok && (st.Reason == reason || st.Code == code)
}

// Each Is function below matches a *wire.Status anywhere in err's chain.
// "Or code N" means: or a Status with HTTP code N whose reason is not one
// apimachinery knows (empty, or free text such as a webhook's), as
// apimachinery's functions of the same name decide.

// IsNotFound: reason NotFound, or code 404. apimachinery: IsNotFound.
func IsNotFound(err error) bool { return isReason(err, http.StatusNotFound, wire.ReasonNotFound) }

// IsAlreadyExists: reason AlreadyExists (a create of an existing name),
// with no code fallback (a 409 is a Conflict). apimachinery:
// IsAlreadyExists.
func IsAlreadyExists(err error) bool { return isReason(err, 0, wire.ReasonAlreadyExists) }

// IsConflict: reason Conflict (a stale resourceVersion on update or
// delete), or code 409. apimachinery: IsConflict.
func IsConflict(err error) bool { return isReason(err, http.StatusConflict, wire.ReasonConflict) }

// IsGone: reason Gone or Expired, or code 410: the resourceVersion or
// continue token can no longer be served, and a reader that sees it must
// relist. apimachinery: IsGone(err) || IsResourceExpired(err).
func IsGone(err error) bool {
	return isReason(err, http.StatusGone, wire.ReasonGone, wire.ReasonExpired)
}

// IsExpired: reason Expired (a resourceVersion or continue token too old),
// with no code fallback. apimachinery: IsResourceExpired.
func IsExpired(err error) bool { return isReason(err, 0, wire.ReasonExpired) }

// IsInvalid: reason Invalid, or code 422. apimachinery: IsInvalid.
func IsInvalid(err error) bool {
	return isReason(err, http.StatusUnprocessableEntity, wire.ReasonInvalid)
}

// IsBadRequest: reason BadRequest, or code 400. apimachinery: IsBadRequest.
func IsBadRequest(err error) bool { return isReason(err, http.StatusBadRequest, wire.ReasonBadRequest) }

// IsForbidden: reason Forbidden, or code 403 (an admission webhook's
// denial with a reason of its own is one). apimachinery: IsForbidden.
func IsForbidden(err error) bool { return isReason(err, http.StatusForbidden, wire.ReasonForbidden) }

// IsUnauthorized: reason Unauthorized, or code 401. apimachinery:
// IsUnauthorized.
func IsUnauthorized(err error) bool {
	return isReason(err, http.StatusUnauthorized, wire.ReasonUnauthorized)
}

// IsTooManyRequests: reason TooManyRequests, or code 429 whatever the
// reason. apimachinery: IsTooManyRequests.
func IsTooManyRequests(err error) bool {
	return isReasonOrCode(err, http.StatusTooManyRequests, wire.ReasonTooManyRequests)
}

// IsTimeout: reason Timeout (504: the server gave up waiting on
// something) or ServerTimeout (the request could not be completed in
// time; kube sends it with 500 or 504), or code 504. apimachinery:
// IsTimeout(err) || IsServerTimeout(err).
func IsTimeout(err error) bool {
	return isReason(err, http.StatusGatewayTimeout, wire.ReasonTimeout, wire.ReasonServerTimeout)
}

// ErrRequest is wrapped by errors about a request the client refuses to
// send (an empty name, an object that does not encode).
var ErrRequest = errors.New("client: invalid request")

// drainClose reads what is left of a body (so the connection can be
// reused) and closes it.
func drainClose(body io.ReadCloser) error {
	_, err := io.Copy(io.Discard, io.LimitReader(body, maxErrorBody))
	if cerr := body.Close(); err == nil {
		err = cerr
	}
	return err
}
