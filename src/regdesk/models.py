"""Every table, imported in one place so the metadata (and Alembic) sees them all."""

from regdesk.audit.models import AuditEvent
from regdesk.db import Base, InstanceSetting
from regdesk.departments.models import Department, DepartmentLead
from regdesk.documents.models import DocumentQueue, UserDocument, VolunteerDocument
from regdesk.events.models import Event, EventOption
from regdesk.oauth.models import AccessToken, Application, AuthorizationCode, Grant, RefreshToken
from regdesk.roles.models import Role, UserRole
from regdesk.users.models import User, UserPermission
from regdesk.volunteers.models import (
    Volunteer,
    VolunteerContactMethod,
    VolunteerDepartmentState,
    VolunteerOptionValue,
)
from regdesk.web.models import LoginFailure, WebSession

metadata = Base.metadata

__all__ = [
    "AccessToken",
    "Application",
    "AuditEvent",
    "AuthorizationCode",
    "Department",
    "DepartmentLead",
    "DocumentQueue",
    "Event",
    "EventOption",
    "Grant",
    "InstanceSetting",
    "LoginFailure",
    "RefreshToken",
    "Role",
    "User",
    "UserDocument",
    "UserPermission",
    "UserRole",
    "Volunteer",
    "VolunteerContactMethod",
    "VolunteerDepartmentState",
    "VolunteerDocument",
    "VolunteerOptionValue",
    "WebSession",
    "metadata",
]
