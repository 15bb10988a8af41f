package object

import (
	"fmt"
	"strings"
)

// MaxAnnotationsSize is the total size limit of an object's annotations,
// keys plus values, as Kubernetes enforces it.
const MaxAnnotationsSize = 256 * 1024

// ValidateDNS1123Subdomain checks a resource name such as a ConfigMap's:
// at most 253 characters, lower-case alphanumerics, '-' and '.', starting
// and ending with an alphanumeric.
func ValidateDNS1123Subdomain(s string) error {
	if len(s) == 0 || len(s) > 253 {
		return fmt.Errorf("%q must be between 1 and 253 characters", s)
	}
	for _, part := range strings.Split(s, ".") {
		if err := dns1123Label(part, 253); err != nil {
			return fmt.Errorf("%q must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character", s)
		}
	}
	return nil
}

// ValidateDNS1123Label checks a name such as a namespace's: at most 63
// lower-case alphanumerics or '-', starting and ending with an alphanumeric.
func ValidateDNS1123Label(s string) error {
	if err := dns1123Label(s, 63); err != nil {
		return fmt.Errorf("%q must be no more than 63 characters, consist of lower case alphanumeric characters or '-', and start and end with an alphanumeric character", s)
	}
	return nil
}

func dns1123Label(s string, max int) error {
	if len(s) == 0 || len(s) > max {
		return fmt.Errorf("bad length")
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		ok := c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' && i > 0 && i < len(s)-1
		if !ok {
			return fmt.Errorf("bad character")
		}
	}
	return nil
}

// ValidateLabelKey checks a label or annotation key: an optional DNS
// subdomain prefix and '/', then a name of at most 63 characters of
// alphanumerics, '-', '_' and '.', starting and ending with an alphanumeric.
func ValidateLabelKey(k string) error {
	prefix, name, hasPrefix := strings.Cut(k, "/")
	if !hasPrefix {
		name, prefix = prefix, ""
	} else if err := ValidateDNS1123Subdomain(prefix); err != nil {
		return fmt.Errorf("invalid key %q: prefix: %w", k, err)
	}
	if !isQualifiedName(name, false) {
		return fmt.Errorf("invalid key %q: name part must be 1-63 alphanumeric characters, '-', '_' or '.', starting and ending with an alphanumeric character", k)
	}
	return nil
}

// ValidateLabelValue checks a label value: empty, or at most 63 characters
// of alphanumerics, '-', '_' and '.', starting and ending with an alphanumeric.
func ValidateLabelValue(v string) error {
	if !isQualifiedName(v, true) {
		return fmt.Errorf("invalid label value %q: must be 63 characters or less, alphanumeric, '-', '_' or '.', starting and ending with an alphanumeric character", v)
	}
	return nil
}

func isQualifiedName(s string, allowEmpty bool) bool {
	if s == "" {
		return allowEmpty
	}
	if len(s) > 63 || !isAlnum(s[0]) || !isAlnum(s[len(s)-1]) {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !isAlnum(c) && c != '-' && c != '_' && c != '.' {
			return false
		}
	}
	return true
}

// ValidateLabels checks every key and value.
func ValidateLabels(labels map[string]string) error {
	for k, v := range labels {
		if err := ValidateLabelKey(k); err != nil {
			return err
		}
		if err := ValidateLabelValue(v); err != nil {
			return err
		}
	}
	return nil
}

// ValidateAnnotations checks every key and the total size.
func ValidateAnnotations(annotations map[string]string) error {
	total := 0
	for k, v := range annotations {
		if err := ValidateLabelKey(strings.ToLower(k)); err != nil {
			return err
		}
		total += len(k) + len(v)
	}
	if total > MaxAnnotationsSize {
		return fmt.Errorf("annotations: too long: must have at most %d bytes", MaxAnnotationsSize)
	}
	return nil
}
