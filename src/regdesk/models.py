"""Every table, imported in one place so the metadata (and Alembic) sees them all, and every
record document (regdesk.documents), which the app and the command line install at start."""

from regdesk.accounts.factor_models import RecoveryCode, SecurityKey, TotpFactor
from regdesk.accounts.links import AccountLink
from regdesk.accounts.models import LoginFailure
from regdesk.audit.models import AuditEvent
from regdesk.db import Base
from regdesk.db.instance import InstanceSetting
from regdesk.departments import records as department_records
from regdesk.departments.models import Department, DepartmentLead
from regdesk.documents import Document
from regdesk.documents.models import DocumentQueue
from regdesk.events.models import Event, EventOption
from regdesk.keys.models import SigningKey
from regdesk.oauth.models import (
    AccessToken,
    Application,
    AuthorizationCode,
    Grant,
    RefreshToken,
    UserPermission,
)
from regdesk.outbox.models import OutboxMessage
from regdesk.registrations import records as registration_records
from regdesk.registrations.models import (
    Order,
    Product,
    Registration,
    RegistrationFlag,
    RegistrationFlagLink,
    RegistrationOption,
    RegistrationOptionValue,
)
from regdesk.roles.models import Role, UserRole
from regdesk.users import records as user_records
from regdesk.users.models import User
from regdesk.volunteers import records as volunteer_records
from regdesk.volunteers.models import (
    Volunteer,
    VolunteerContactMethod,
    VolunteerDepartmentState,
    VolunteerOptionValue,
)
from regdesk.web.models import WebSession
from regdesk.webhooks.models import WebhookChange, WebhookDelivery, WebhookEndpoint

metadata = Base.metadata
DOCUMENTS: tuple[Document, ...] = (
    user_records.DOCUMENT,
    volunteer_records.DOCUMENT,
    registration_records.DOCUMENT,
    department_records.DOCUMENT,
)

__all__ = [
    "DOCUMENTS",
    "AccessToken",
    "AccountLink",
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
    "Order",
    "OutboxMessage",
    "Product",
    "RecoveryCode",
    "RefreshToken",
    "Registration",
    "RegistrationFlag",
    "RegistrationFlagLink",
    "RegistrationOption",
    "RegistrationOptionValue",
    "Role",
    "SecurityKey",
    "SigningKey",
    "TotpFactor",
    "User",
    "UserPermission",
    "UserRole",
    "Volunteer",
    "VolunteerContactMethod",
    "VolunteerDepartmentState",
    "VolunteerOptionValue",
    "WebSession",
    "WebhookChange",
    "WebhookDelivery",
    "WebhookEndpoint",
    "metadata",
]
