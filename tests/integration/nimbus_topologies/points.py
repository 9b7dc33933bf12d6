"""A metrics consumer for the cluster tests: appends every data point it receives to a file."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from stormpy.topology._metrics_consumer import ConsumerContext, IMetricsConsumer, TaskInfo


class FileConsumer(IMetricsConsumer):
    """``argument`` is the path of a JSON-lines file: one line per task and delivery, with the
    task info, the data points and the consumer's context."""

    def prepare(self, conf: Mapping[str, Any], argument: Any, context: ConsumerContext) -> None:
        self.path = str(argument)
        self.context = context

    def handle_data_points(self, task_info: TaskInfo, data_points: dict[str, Any]) -> None:
        line = {"component": task_info.component, "task": task_info.task, "host": task_info.host,
                "port": task_info.port, "timestamp": task_info.timestamp,
                "worker_tasks": list(self.context.tasks), "points": data_points}
        with open(self.path, "a", encoding="utf-8") as out:
            out.write(json.dumps(line, default=str) + "\n")
