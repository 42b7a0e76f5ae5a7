package mcpserver

// MaxResultBytes is the bound of one page's items' JSON, for the external
// tests.
const MaxResultBytes = maxResultBytes
