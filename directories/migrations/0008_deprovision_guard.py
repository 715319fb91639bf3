"""The deprovision guard (contract §4.2): its setting on every directory (existing ones get the defaults),
its state, the held changes, the window's record of deprovisions, and the view of users the SCIM surface
reads while changes are held (directories.models.ScimUser). The view's SQL runs unchanged on PostgreSQL and
SQLite: each user's row when it has nothing held, else its last held change, and no user whose held change
is a delete. UNION ALL rather than a join, so that a condition on the users' indexed columns still reaches
their indexes in the first branch, while the second starts from the directory's few held changes (its
`directory_id` is the held change's, which the position index serves) and joins their users by key."""

import directories.guard.rules
import django.db.models.deletion
import uuid
from django.db import migrations, models

VIEW = """
CREATE VIEW directories_scimuser AS
SELECT u.id, u.directory_id, u.user_name, u.user_name_key, u.external_id, u.active, u.raw, u.filter_doc,
       u.created_at, u.updated_at
  FROM directories_directoryuser u
 WHERE NOT u.held
UNION ALL
SELECT u.id, h.directory_id, h.user_name, h.user_name_key, h.external_id, h.active, h.raw, h.filter_doc,
       u.created_at, h.held_at
  FROM directories_heldchange h
  JOIN directories_directoryuser u ON u.id = h.user_id
 WHERE h.latest AND h.change <> 'delete'
"""


class Migration(migrations.Migration):

    dependencies = [
        ('directories', '0007_scim_oauth'),
    ]

    operations = [
        migrations.AddField(
            model_name='directory',
            name='deprovision_guard',
            field=models.JSONField(default=directories.guard.rules.guard_defaults),
        ),
        migrations.AddField(
            model_name='directory',
            name='guard_armed_at',
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name='directory',
            name='guard_tripped_at',
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name='directoryuser',
            name='held',
            field=models.BooleanField(default=False),
        ),
        migrations.CreateModel(
            name='Deprovision',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('at', models.DateTimeField()),
                ('directory', models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='+', to='directories.directory')),
            ],
            options={
                'indexes': [models.Index(fields=['directory', 'at'], name='deprovision_directory_at'), models.Index(fields=['at'], name='deprovision_at')],
            },
        ),
        migrations.CreateModel(
            name='HeldChange',
            fields=[
                ('id', models.UUIDField(default=uuid.uuid4, editable=False, primary_key=True, serialize=False)),
                ('position', models.BigIntegerField()),
                ('change', models.CharField(choices=[('deactivate', 'Deactivate'), ('delete', 'Delete'), ('update', 'Update')], max_length=16)),
                ('held_at', models.DateTimeField()),
                ('scim_request_id', models.CharField(blank=True, default='', max_length=128)),
                ('latest', models.BooleanField(default=True)),
                ('user_name', models.CharField(max_length=512)),
                ('user_name_key', models.CharField(max_length=512)),
                ('external_id', models.CharField(blank=True, max_length=512, null=True)),
                ('first_name', models.CharField(blank=True, default='', max_length=512)),
                ('last_name', models.CharField(blank=True, default='', max_length=512)),
                ('email', models.CharField(blank=True, default='', max_length=512)),
                ('email_key', models.CharField(blank=True, default='', max_length=512)),
                ('active', models.BooleanField(default=True)),
                ('raw', models.JSONField(default=dict)),
                ('filter_doc', models.JSONField(default=dict)),
                ('directory', models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='held_changes', to='directories.directory')),
                ('user', models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='+', to='directories.directoryuser')),
            ],
            options={
                'ordering': ['position'],
                'indexes': [models.Index(fields=['user', 'position'], name='held_change_user')],
                'constraints': [models.UniqueConstraint(fields=('directory', 'position'), name='held_change_position'), models.UniqueConstraint(condition=models.Q(('latest', True)), fields=('user',), name='held_change_latest')],
            },
        ),
            migrations.CreateModel(
            name='ScimUser',
            fields=[
                ('id', models.UUIDField(primary_key=True, serialize=False)),
                ('directory', models.ForeignKey(db_constraint=False, db_index=False, on_delete=django.db.models.deletion.DO_NOTHING, related_name='+', to='directories.directory')),
                ('user_name', models.CharField(max_length=512)),
                ('user_name_key', models.CharField(max_length=512)),
                ('external_id', models.CharField(max_length=512, null=True)),
                ('active', models.BooleanField()),
                ('raw', models.JSONField()),
                ('filter_doc', models.JSONField()),
                ('created_at', models.DateTimeField()),
                ('updated_at', models.DateTimeField()),
            ],
            options={
                'db_table': 'directories_scimuser',
                'ordering': ['created_at', 'id'],
                'managed': False,
            },
        ),
        migrations.RunSQL(VIEW, reverse_sql='DROP VIEW directories_scimuser'),
    ]
