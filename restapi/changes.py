"""REST API: a directory's changes feed (`GET /api/v1/directory-sync/<id>/changes`, contract §5.1)."""

from __future__ import annotations

from rest_framework.request import Request
from rest_framework.response import Response

from core.apiinput import position_bounds
from core.envelope import ok
from core.errors import NotFound
from directories.selectors import directory_get
from restapi import openapi_common as doc
from restapi import openapi_feed as feed_doc
from restapi.apis import ApiView
from restapi.openapi_marks import extend_schema
from webhooks.feed import FEED_LIMIT_DEFAULT, FEED_LIMIT_MAX, feed_read
from webhooks.rendering import change_data, feed_head_data
from webhooks.selectors import events_deliveries


class DirectoryChangesApi(ApiView):
    @extend_schema(
        operation_id="directory_changes_list",
        summary="The changes feed of a directory",
        description=feed_doc.FEED_DESCRIPTION,
        parameters=[doc.path_uuid("directory_id"), feed_doc.AFTER, feed_doc.LIMIT],
        responses={200: feed_doc.ChangeListEnvelope, **doc.errors(404, 410)},
    )
    def get(self, request: Request, directory_id: str) -> Response:
        directory = directory_get(directory_id=directory_id)
        if directory is None:
            raise NotFound("Directory not found.")
        after, limit = position_bounds(request, default_limit=FEED_LIMIT_DEFAULT, max_limit=FEED_LIMIT_MAX)
        page = feed_read(directory=directory, after=after, limit=limit)
        deliveries = events_deliveries(event_ids=[event.id for event in page.events])
        return ok(
            [change_data(event, deliveries.get(event.id)) for event in page.events],
            extra={"events": feed_head_data(page.head)},
        )
