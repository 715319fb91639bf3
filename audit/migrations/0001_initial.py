# The audit trail's model moves here from adminauth; its table stays where it is (state only).

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):
    initial = True

    dependencies = [
        ("adminauth", "0004_login_failure_scope"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name="AuditEntry",
                    fields=[
                        ("id", models.BigAutoField(primary_key=True, serialize=False)),
                        ("actor_email", models.CharField(blank=True, default="", max_length=320)),
                        ("action", models.CharField(max_length=64)),
                        ("target_type", models.CharField(blank=True, default="", max_length=32)),
                        ("target_id", models.CharField(blank=True, default="", max_length=64)),
                        ("directory_id", models.UUIDField(blank=True, null=True)),
                        ("client_ip", models.GenericIPAddressField(blank=True, null=True)),
                        ("details", models.JSONField(blank=True, default=dict)),
                        ("created_at", models.DateTimeField(auto_now_add=True)),
                        (
                            "actor",
                            models.ForeignKey(
                                blank=True,
                                null=True,
                                on_delete=django.db.models.deletion.SET_NULL,
                                related_name="+",
                                to=settings.AUTH_USER_MODEL,
                            ),
                        ),
                    ],
                    options={
                        "db_table": "adminauth_auditentry",
                        "ordering": ["-created_at", "-id"],
                        "indexes": [
                            models.Index(fields=["action", "created_at"], name="audit_action"),
                            models.Index(fields=["directory_id", "created_at"], name="audit_directory"),
                            models.Index(fields=["actor", "created_at"], name="audit_actor"),
                        ],
                    },
                ),
            ],
            database_operations=[],
        ),
    ]
