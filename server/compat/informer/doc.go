// Package informer holds the tests of the library's informer package that need
// a server or client-go; see package compat.
package informer
