"""The webhooks suite's receiver and broker fixtures, for the operations views and doctor."""

from tests.webhooks.conftest import broker_url, celery_worker, private_ok, receiver  # noqa: F401
