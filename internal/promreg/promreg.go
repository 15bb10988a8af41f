// Package promreg registers Prometheus collectors on a Registerer that
// other components (a second server, another cache, another Store) may
// have registered the same collectors on already.
package promreg

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// Register registers c on reg and returns it, or returns the equal
// collector already registered in its place, so that several components
// share one series set. A nil reg registers nothing and returns c. A
// differently shaped collector under the same name is an error; c is
// returned with it, unregistered but usable.
func Register[C prometheus.Collector](reg prometheus.Registerer, c C) (C, error) {
	if reg == nil {
		return c, nil
	}
	err := reg.Register(c)
	if err == nil {
		return c, nil
	}
	var are prometheus.AlreadyRegisteredError
	if errors.As(err, &are) {
		if existing, ok := are.ExistingCollector.(C); ok {
			return existing, nil
		}
	}
	return c, err
}
