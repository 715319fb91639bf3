"""OAuth 2.0 client credentials for SCIM (contract §4.3): the digest of a directory's client secret and when
it was made (none: OAuth is off), and the switch of its static SCIM secret (on for every directory). Adding
columns with constant defaults rewrites no table on PostgreSQL 11 and later."""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('directories', '0006_drop_redundant_fk_indexes'),
    ]

    operations = [
        migrations.AddField(
            model_name='directory',
            name='scim_oauth_secret_created_at',
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name='directory',
            name='scim_oauth_secret_hash',
            field=models.CharField(blank=True, default='', max_length=64),
        ),
        migrations.AddField(
            model_name='directory',
            name='scim_static_secret_enabled',
            field=models.BooleanField(default=True),
        ),
    ]
