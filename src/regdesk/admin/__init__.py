"""The organizers' side (issue 8): server-rendered admin pages under /admin.

`access` decides who may see what: holders of the `admin` permission see everything; a
department's leads see their own departments and those departments' volunteers. Every page
and form action states its rule in its signature (`AdminDep` or `StaffDep`).
"""
