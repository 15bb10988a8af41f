package wire

import (
	"fmt"
	"net/http"
	"strings"
)

// StatusReason is the machine-readable reason of a failed request.
type StatusReason string

const (
	ReasonUnknown               StatusReason = ""
	ReasonUnauthorized          StatusReason = "Unauthorized"
	ReasonForbidden             StatusReason = "Forbidden"
	ReasonNotFound              StatusReason = "NotFound"
	ReasonAlreadyExists         StatusReason = "AlreadyExists"
	ReasonConflict              StatusReason = "Conflict"
	ReasonGone                  StatusReason = "Gone"
	ReasonInvalid               StatusReason = "Invalid"
	ReasonServerTimeout         StatusReason = "ServerTimeout"
	ReasonStoreReadError        StatusReason = "StorageReadError"
	ReasonTimeout               StatusReason = "Timeout"
	ReasonTooManyRequests       StatusReason = "TooManyRequests"
	ReasonBadRequest            StatusReason = "BadRequest"
	ReasonMethodNotAllowed      StatusReason = "MethodNotAllowed"
	ReasonNotAcceptable         StatusReason = "NotAcceptable"
	ReasonRequestEntityTooLarge StatusReason = "RequestEntityTooLarge"
	ReasonUnsupportedMediaType  StatusReason = "UnsupportedMediaType"
	ReasonInternalError         StatusReason = "InternalError"
	ReasonExpired               StatusReason = "Expired"
	ReasonServiceUnavailable    StatusReason = "ServiceUnavailable"
)

// Status values.
const (
	StatusSuccess = "Success"
	StatusFailure = "Failure"
)

// Status is Kubernetes' error (and sometimes success) document. A *Status
// is an error, so handlers can return it and clients can errors.As it.
type Status struct {
	TypeMeta `json:",inline"`
	Metadata ListMeta       `json:"metadata"`
	Status   string         `json:"status,omitempty"`
	Message  string         `json:"message,omitempty"`
	Reason   StatusReason   `json:"reason,omitempty"`
	Details  *StatusDetails `json:"details,omitempty"`
	Code     int32          `json:"code,omitempty"`
}

// StatusDetails names the object a Status is about.
type StatusDetails struct {
	Name              string        `json:"name,omitempty"`
	Group             string        `json:"group,omitempty"`
	Kind              string        `json:"kind,omitempty"`
	UID               string        `json:"uid,omitempty"`
	Causes            []StatusCause `json:"causes,omitempty"`
	RetryAfterSeconds int32         `json:"retryAfterSeconds,omitempty"`
}

// StatusCause is one reason an object is invalid.
type StatusCause struct {
	Type    string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
	Field   string `json:"field,omitempty"`
}

// Error makes *Status an error.
func (s *Status) Error() string { return s.Message }

// ReasonOf returns the reason of err if it is (or wraps) a *Status.
func ReasonOf(err error) StatusReason {
	if s, ok := asStatus(err); ok {
		return s.Reason
	}
	return ReasonUnknown
}

// CodeOf returns the HTTP code of err if it is (or wraps) a *Status, else 0.
func CodeOf(err error) int32 {
	if s, ok := asStatus(err); ok {
		return s.Code
	}
	return 0
}

func asStatus(err error) (*Status, bool) {
	for err != nil {
		if s, ok := err.(*Status); ok {
			return s, true
		}
		u, ok := err.(interface{ Unwrap() error })
		if !ok {
			return nil, false
		}
		err = u.Unwrap()
	}
	return nil, false
}

func newStatus(code int, reason StatusReason, msg string, details *StatusDetails) *Status {
	return &Status{
		TypeMeta: TypeMeta{APIVersion: "v1", Kind: "Status"},
		Status:   StatusFailure,
		Message:  msg,
		Reason:   reason,
		Details:  details,
		Code:     int32(code),
	}
}

// GroupResource names a resource in a group, for messages ("configmaps",
// "leases.coordination.k8s.io").
type GroupResource struct {
	Group    string
	Resource string
}

func (gr GroupResource) String() string {
	if gr.Group == "" {
		return gr.Resource
	}
	return gr.Resource + "." + gr.Group
}

// NewNotFound: `configmaps "x" not found`.
func NewNotFound(gr GroupResource, name string) *Status {
	return newStatus(http.StatusNotFound, ReasonNotFound,
		fmt.Sprintf("%s %q not found", gr, name),
		&StatusDetails{Name: name, Group: gr.Group, Kind: gr.Resource})
}

// NewAlreadyExists: `configmaps "x" already exists`.
func NewAlreadyExists(gr GroupResource, name string) *Status {
	return newStatus(http.StatusConflict, ReasonAlreadyExists,
		fmt.Sprintf("%s %q already exists", gr, name),
		&StatusDetails{Name: name, Group: gr.Group, Kind: gr.Resource})
}

// NewConflict: the optimistic-concurrency failure of an update or delete.
func NewConflict(gr GroupResource, name, why string) *Status {
	return newStatus(http.StatusConflict, ReasonConflict,
		fmt.Sprintf("Operation cannot be fulfilled on %s %q: %s", gr, name, why),
		&StatusDetails{Name: name, Group: gr.Group, Kind: gr.Resource})
}

// ConflictModified is the usual reason text of a stale update.
const ConflictModified = "the object has been modified; please apply your changes to the latest version and try again"

// NewInvalid: `ConfigMap "X" is invalid: field: message`.
func NewInvalid(group, kind, name string, causes ...StatusCause) *Status {
	parts := make([]string, 0, len(causes))
	for _, c := range causes {
		if c.Field != "" {
			parts = append(parts, c.Field+": "+c.Message)
		} else {
			parts = append(parts, c.Message)
		}
	}
	msg := fmt.Sprintf("%s %q is invalid", kind, name)
	if len(parts) == 1 {
		msg += ": " + parts[0]
	} else if len(parts) > 1 {
		msg += ": [" + strings.Join(parts, ", ") + "]"
	}
	return newStatus(http.StatusUnprocessableEntity, ReasonInvalid, msg,
		&StatusDetails{Name: name, Group: group, Kind: kind, Causes: causes})
}

// NewBadRequest is a 400 for a malformed request.
func NewBadRequest(msg string) *Status {
	return newStatus(http.StatusBadRequest, ReasonBadRequest, msg, nil)
}

// NewResourceExpired is the 410 Expired of a too-old resourceVersion or
// continue token.
func NewResourceExpired(msg string) *Status {
	return newStatus(http.StatusGone, ReasonExpired, msg, nil)
}

// NewGone is a 410 Gone.
func NewGone(msg string) *Status {
	return newStatus(http.StatusGone, ReasonGone, msg, nil)
}

// NewUnauthorized is the 401 of a request without valid credentials.
func NewUnauthorized() *Status {
	return newStatus(http.StatusUnauthorized, ReasonUnauthorized, "Unauthorized", nil)
}

// NewForbidden: `configmaps is forbidden: User "bob" cannot list resource ...`.
func NewForbidden(gr GroupResource, name, why string) *Status {
	subject := gr.String()
	if name != "" {
		subject += fmt.Sprintf(" %q", name)
	}
	return newStatus(http.StatusForbidden, ReasonForbidden,
		fmt.Sprintf("%s is forbidden: %s", subject, why),
		&StatusDetails{Name: name, Group: gr.Group, Kind: gr.Resource})
}

// NewTooManyRequests is the 429 of the in-flight limit.
func NewTooManyRequests(retryAfterSeconds int) *Status {
	return newStatus(http.StatusTooManyRequests, ReasonTooManyRequests,
		"Too many requests, please try again later.",
		&StatusDetails{RetryAfterSeconds: int32(retryAfterSeconds)})
}

// NewRequestEntityTooLarge is the 413 of an oversized body.
func NewRequestEntityTooLarge(limit int64) *Status {
	return newStatus(http.StatusRequestEntityTooLarge, ReasonRequestEntityTooLarge,
		fmt.Sprintf("Request entity too large: limit is %d", limit), nil)
}

// NewMethodNotSupported is a 405. As kube's, its details name the group
// and, as the kind, the resource.
func NewMethodNotSupported(gr GroupResource, verb string) *Status {
	return newStatus(http.StatusMethodNotAllowed, ReasonMethodNotAllowed,
		fmt.Sprintf("%s is not supported on resources of kind %q", verb, gr.String()),
		&StatusDetails{Group: gr.Group, Kind: gr.Resource})
}

// NewUnsupportedMediaType is a 415.
func NewUnsupportedMediaType(contentType string) *Status {
	return newStatus(http.StatusUnsupportedMediaType, ReasonUnsupportedMediaType,
		fmt.Sprintf("the body of the request was in an unknown format - accepted media types include: application/json, application/yaml; got %q", contentType), nil)
}

// NewNotAcceptable is a 406.
func NewNotAcceptable(accept string) *Status {
	return newStatus(http.StatusNotAcceptable, ReasonNotAcceptable,
		fmt.Sprintf("only the following media types are accepted: application/json, got %q", accept), nil)
}

// NewTimeout is the 504 of a request that exceeded its deadline.
func NewTimeout(msg string) *Status {
	return newStatus(http.StatusGatewayTimeout, ReasonTimeout, msg, nil)
}

// NewServiceUnavailable is a 503.
func NewServiceUnavailable(msg string) *Status {
	return newStatus(http.StatusServiceUnavailable, ReasonServiceUnavailable, msg, nil)
}

// NewInternalError is a 500 wrapping err's text.
func NewInternalError(err error) *Status {
	return newStatus(http.StatusInternalServerError, ReasonInternalError,
		fmt.Sprintf("Internal error occurred: %v", err), nil)
}

// NewSuccess is the Status a successful DELETE of a collection returns.
func NewSuccess() *Status {
	s := newStatus(http.StatusOK, "", "", nil)
	s.Status = StatusSuccess
	s.Code = 0
	return s
}
