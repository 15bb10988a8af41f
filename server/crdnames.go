package server

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
)

// The names a CRD asks for (spec.names) are served only once accepted
// (status.acceptedNames), as kube's naming controller decides: a name is
// accepted if it is the one already accepted, or if no other resource of
// the group uses it. Resource names (plural, singular, short names) and
// kind names (kind, listKind) are checked separately. Unlike kube, the
// built-in resources of the group count as users too, so no CRD can
// shadow a built-in (customresourcedefinitions.apiextensions.k8s.io,
// leases.coordination.k8s.io, …). The decision is made when the CRD is
// written, against the CRDs this server serves at that moment.

// crdNames is spec.names or status.acceptedNames of a CRD.
type crdNames struct {
	Plural     string   `json:"plural,omitempty"`
	Singular   string   `json:"singular,omitempty"`
	ShortNames []string `json:"shortNames,omitempty"`
	Kind       string   `json:"kind,omitempty"`
	ListKind   string   `json:"listKind,omitempty"`
	Categories []string `json:"categories,omitempty"`
}

// crdCondition is one of a CRD's status.conditions.
type crdCondition struct {
	Type               string `json:"type"`
	Status             string `json:"status"`
	LastTransitionTime string `json:"lastTransitionTime,omitempty"`
	Reason             string `json:"reason,omitempty"`
	Message            string `json:"message,omitempty"`
}

// crdStatus is the status of a CRD, as the server writes it.
type crdStatus struct {
	AcceptedNames  crdNames       `json:"acceptedNames"`
	Conditions     []crdCondition `json:"conditions"`
	StoredVersions []string       `json:"storedVersions"`
}

func (st *crdStatus) condition(typ string) *crdCondition {
	for i := range st.Conditions {
		if st.Conditions[i].Type == typ {
			return &st.Conditions[i]
		}
	}
	return nil
}

// isTrue reports whether the condition typ is True.
func (st *crdStatus) isTrue(typ string) bool {
	c := st.condition(typ)
	return c != nil && c.Status == "True"
}

// setCondition sets c, keeping the last transition time when the status
// does not change.
func (st *crdStatus) setCondition(c crdCondition) {
	if old := st.condition(c.Type); old != nil {
		if old.Status == c.Status && old.LastTransitionTime != "" {
			c.LastTransitionTime = old.LastTransitionTime
		}
		*old = c
		return
	}
	st.Conditions = append(st.Conditions, c)
}

// usedNames are the resource and kind names taken in one group.
type usedNames struct{ resources, kinds map[string]bool }

// usedNames returns the names used in group by the built-ins and by the
// CRDs served now other than except.
func (reg *registry) usedNames(group, except string) usedNames {
	u := usedNames{resources: map[string]bool{}, kinds: map[string]bool{}}
	reg.mu.RLock()
	defer reg.mu.RUnlock()
	for _, r := range reg.byGVR {
		if r.group != group || (r.crd != "" && r.crd == except) {
			continue
		}
		u.resources[r.plural] = true
		u.resources[r.singular] = true
		for _, s := range r.shortNames {
			u.resources[s] = true
		}
		u.kinds[r.kind] = true
		u.kinds[r.listKind] = true
	}
	return u
}

// acceptOrFresh is nil if requested is the name already accepted or one
// nobody uses, else the conflict as kube words it.
func acceptOrFresh(requested, accepted string, used map[string]bool) error {
	if requested == accepted || !used[requested] {
		return nil
	}
	return fmt.Errorf("%q is already in use", requested)
}

// acceptNames decides which of the requested names are accepted, given
// those accepted before and the names used in the group, and returns the
// new accepted names with the NamesAccepted condition (without time).
// The last conflict found gives the condition's reason, as in kube.
func acceptNames(requested, accepted crdNames, used usedNames) (crdNames, crdCondition) {
	out := accepted
	cond := crdCondition{Type: "NamesAccepted"}
	conflict := func(reason string, err error) {
		cond.Status, cond.Reason, cond.Message = "False", reason, err.Error()
	}
	if err := acceptOrFresh(requested.Plural, accepted.Plural, used.resources); err != nil {
		conflict("PluralConflict", err)
	} else {
		out.Plural = requested.Plural
	}
	if err := acceptOrFresh(requested.Singular, accepted.Singular, used.resources); err != nil {
		conflict("SingularConflict", err)
	} else {
		out.Singular = requested.Singular
	}
	if !slices.Equal(requested.ShortNames, accepted.ShortNames) {
		var errs []string
		for _, s := range requested.ShortNames {
			if slices.Contains(accepted.ShortNames, s) {
				continue
			}
			if err := acceptOrFresh(s, "", used.resources); err != nil {
				errs = append(errs, err.Error())
			}
		}
		switch len(errs) {
		case 0:
			out.ShortNames = requested.ShortNames
		case 1:
			conflict("ShortNamesConflict", fmt.Errorf("%s", errs[0]))
		default:
			conflict("ShortNamesConflict", fmt.Errorf("[%s]", strings.Join(errs, ", ")))
		}
	}
	if err := acceptOrFresh(requested.Kind, accepted.Kind, used.kinds); err != nil {
		conflict("KindConflict", err)
	} else {
		out.Kind = requested.Kind
	}
	if err := acceptOrFresh(requested.ListKind, accepted.ListKind, used.kinds); err != nil {
		conflict("ListKindConflict", err)
	} else {
		out.ListKind = requested.ListKind
	}
	out.Categories = requested.Categories
	if cond.Status == "" {
		cond.Status, cond.Reason, cond.Message = "True", "NoConflicts", "no conflicts found"
	}
	return out, cond
}

// apiApprovedAnnotation marks a CRD in a protected group (*.k8s.io,
// *.kubernetes.io) as approved by the Kubernetes API reviewers.
const apiApprovedAnnotation = "api-approved.kubernetes.io"

// isProtectedGroup reports whether group belongs to the Kubernetes
// project, whose CRDs need apiApprovedAnnotation.
func isProtectedGroup(group string) bool {
	return group == "k8s.io" || strings.HasSuffix(group, ".k8s.io") ||
		group == "kubernetes.io" || strings.HasSuffix(group, ".kubernetes.io")
}

type approvalState int

const (
	approvalInvalid approvalState = iota
	approvalApproved
	approvalBypassed
	approvalMissing
)

// approval classifies the annotation value v as kube does: a URL with a
// scheme and host approves, "unapproved…" bypasses, anything else is
// invalid.
func approval(v string) approvalState {
	switch u, err := url.ParseRequestURI(v); {
	case v == "":
		return approvalMissing
	case strings.HasPrefix(v, "unapproved"):
		return approvalBypassed
	case err == nil && u.Host != "" && u.Scheme != "":
		return approvalApproved
	default:
		return approvalInvalid
	}
}
