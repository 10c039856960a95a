package console

// page is one area of the panel: its routes, and its navigation entry
// when Title is not empty.
type page struct {
	Key    string // names the navigation entry the area's pages highlight
	Title  string // the navigation label; "" keeps the area out of the navigation
	Path   string // where the navigation entry links, relative to the prefix
	routes func(h *handler, rt *router)
}

// pages is the panel, in navigation order. Adding an area takes one file
// (its routes and handlers, plus its template in templates/) and one
// entry here.
var pages = []page{
	{Key: "dashboard", Title: "Dashboard", Path: "/", routes: (*handler).dashboardRoutes},
	{Key: "channels", Title: "Channels", Path: "/channels", routes: (*handler).channelsRoutes},
	{Key: "users", Title: "Users", Path: "/users", routes: (*handler).usersRoutes},
	{Key: "users", routes: (*handler).purgeRoutes},
	{Key: "users", routes: (*handler).userDataRoutes},
	{Key: "users", routes: (*handler).devicesRoutes},
	{Key: "reports", Title: "Reports", Path: "/reports", routes: (*handler).reportsRoutes},
	{Key: "roles", Title: "Roles", Path: "/roles", routes: (*handler).rolesRoutes},
	{Key: "rules", Title: "Blacklist & whitelist", Path: "/rules", routes: (*handler).rulesRoutes},
	{Key: "reactions", Title: "Most reacted", Path: "/reactions", routes: (*handler).reactionsRoutes},
	{Key: "webhooks", Title: "Webhooks", Path: "/webhooks", routes: (*handler).webhooksRoutes},
	{Key: "admins", Title: "Admins", Path: "/admins", routes: (*handler).adminsRoutes},
	{Key: "audit", Title: "Audit log", Path: "/audit", routes: (*handler).auditRoutes},
}
