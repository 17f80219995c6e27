// Package plugin keeps the registry of RestoreItemAction plugins, by name and interface
// version. A lookup always returns the newest interface (v2), adapting an older plugin
// where that is safe: a v1 plugin, adapted, reports its additional items ready at once.
// A plugin registered at a version that cannot be adapted gives a *NoAdapterError that
// names it and the versions found.
package plugin
