package client

import (
	"errors"
	"fmt"
	"testing"

	"github.com/listwatch/listwatch/wire"
)

// TestIsFunctionsMatchApimachinery: each Is function decides as its
// apimachinery counterpart (api/errors), a known reason by reason alone
// and any other reason, a webhook's free text included, by the HTTP code.
func TestIsFunctionsMatchApimachinery(t *testing.T) {
	fns := map[string]func(error) bool{
		"IsNotFound": IsNotFound, "IsAlreadyExists": IsAlreadyExists, "IsConflict": IsConflict,
		"IsGone": IsGone, "IsExpired": IsExpired, "IsInvalid": IsInvalid, "IsBadRequest": IsBadRequest,
		"IsForbidden": IsForbidden, "IsUnauthorized": IsUnauthorized,
		"IsTooManyRequests": IsTooManyRequests, "IsTimeout": IsTimeout,
	}
	const webhook = wire.StatusReason("denied by policy.example.com: no privileged pods")
	for _, tc := range []struct {
		reason wire.StatusReason
		code   int32
		want   []string // the functions that match; every other one must not
	}{
		{wire.ReasonNotFound, 404, []string{"IsNotFound"}},
		{wire.ReasonNotFound, 500, []string{"IsNotFound"}},
		{"", 404, []string{"IsNotFound"}},
		{webhook, 404, []string{"IsNotFound"}},
		{wire.ReasonInternalError, 404, nil},
		{wire.ReasonAlreadyExists, 409, []string{"IsAlreadyExists"}},
		{"", 409, []string{"IsConflict"}},
		{wire.ReasonConflict, 409, []string{"IsConflict"}},
		{webhook, 409, []string{"IsConflict"}},
		{wire.ReasonGone, 410, []string{"IsGone"}},
		{wire.ReasonExpired, 410, []string{"IsGone", "IsExpired"}},
		{"", 410, []string{"IsGone"}},
		{webhook, 410, []string{"IsGone"}},
		{wire.ReasonInvalid, 422, []string{"IsInvalid"}},
		{webhook, 422, []string{"IsInvalid"}},
		{wire.ReasonBadRequest, 422, []string{"IsBadRequest"}},
		{webhook, 400, []string{"IsBadRequest"}},
		{wire.ReasonForbidden, 403, []string{"IsForbidden"}},
		{webhook, 403, []string{"IsForbidden"}},
		{wire.ReasonNotFound, 403, []string{"IsNotFound"}},
		{webhook, 401, []string{"IsUnauthorized"}},
		{wire.ReasonTooManyRequests, 429, []string{"IsTooManyRequests"}},
		{wire.ReasonTooManyRequests, 500, []string{"IsTooManyRequests"}},
		// apimachinery takes 429 whatever the reason, a known one too.
		{wire.ReasonServiceUnavailable, 429, []string{"IsTooManyRequests"}},
		{webhook, 429, []string{"IsTooManyRequests"}},
		{wire.ReasonTimeout, 504, []string{"IsTimeout"}},
		{wire.ReasonServerTimeout, 500, []string{"IsTimeout"}},
		{webhook, 504, []string{"IsTimeout"}},
		{wire.ReasonInternalError, 504, nil},
		{webhook, 500, nil},
		{wire.ReasonStoreReadError, 404, nil},
		{wire.ReasonMethodNotAllowed, 403, nil},
	} {
		t.Run(fmt.Sprintf("%s/%d", tc.reason, tc.code), func(t *testing.T) {
			st := &wire.Status{Status: wire.StatusFailure, Reason: tc.reason, Code: tc.code, Message: "m"}
			err := fmt.Errorf("wrapped: %w", st)
			for name, fn := range fns {
				want := false
				for _, w := range tc.want {
					want = want || w == name
				}
				if got := fn(err); got != want {
					t.Errorf("%s = %v, want %v", name, got, want)
				}
			}
		})
	}
	for name, fn := range fns {
		if fn(nil) || fn(errors.New("404 not found")) {
			t.Errorf("%s matched an error that is no Status", name)
		}
	}
}
