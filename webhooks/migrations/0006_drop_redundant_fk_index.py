"""Drops the single-column index of WebhookDelivery.directory: `delivery_directory_created` and
`delivery_directory_failed` start with the same column and serve its lookups. As in the directories app's
migration 0006, only the index goes (no check of every row for the foreign key again)."""

import django.db.models.deletion
from django.db import migrations, models

INDEX = "webhooks_webhookdelivery_directory_id_e651e7fd"


class Migration(migrations.Migration):

    dependencies = [
        ('directories', '0006_drop_redundant_fk_indexes'),
        ('webhooks', '0005_sequence_and_changes_feed'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name='webhookdelivery',
                    name='directory',
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name='webhook_deliveries',
                        to='directories.directory',
                    ),
                ),
            ],
            database_operations=[
                migrations.RunSQL(
                    sql=f'DROP INDEX IF EXISTS "{INDEX}"',
                    reverse_sql=f'CREATE INDEX IF NOT EXISTS "{INDEX}" ON "webhooks_webhookdelivery" ("directory_id")',
                ),
            ],
        ),
    ]
