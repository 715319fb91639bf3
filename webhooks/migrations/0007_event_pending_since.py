"""WebhookEvent.pending_since: when a resend put the event back to pending, so the outbox backlog's age
counts from the resend rather than from the event's recording. A nullable column: adding it rewrites no row."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("webhooks", "0006_drop_redundant_fk_index"),
    ]

    operations = [
        migrations.AddField(
            model_name="webhookevent",
            name="pending_since",
            field=models.DateTimeField(blank=True, null=True),
        ),
    ]
