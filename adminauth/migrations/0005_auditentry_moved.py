# The audit trail's model now belongs to the audit app (audit/migrations/0001_initial.py); its table stays.

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("adminauth", "0004_login_failure_scope"),
        ("audit", "0001_initial"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[migrations.DeleteModel(name="AuditEntry")],
            database_operations=[],
        ),
    ]
