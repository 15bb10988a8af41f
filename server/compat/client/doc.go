// Package client holds the tests of the library's client package that need
// a server or client-go; see package compat.
package client
