"""The example's tests: its views, through Django's test client, against the real demo
server its settings start. Run them from ``examples/django_project``::

    python manage.py test mcpsite
"""

from django.test import SimpleTestCase

from mcp_sync.contrib.django import close


class ViewTests(SimpleTestCase):
    def tearDown(self) -> None:
        close()  # stops the demo server: the next test starts its own

    def test_add_calls_the_demo_servers_tool(self) -> None:
        response = self.client.get("/add", {"a": "2", "b": "3.5"})
        self.assertEqual(response.status_code, 200, response.content)
        self.assertEqual(response.json()["sum"], 5.5)
        self.assertIsInstance(response.json()["server"], int)  # the demo server's pid

    def test_bad_input_is_a_400_in_json(self) -> None:
        for query in ({"a": "x"}, {"a": "1", "b": "nan"}):
            response = self.client.get("/add", query)
            self.assertEqual(response.status_code, 400, response.content)
            self.assertEqual(response["Content-Type"], "application/json")
            self.assertEqual(response.json()["error"], "BadRequest")

    def test_tools_lists_the_demo_servers_tools(self) -> None:
        response = self.client.get("/tools")
        self.assertEqual(response.status_code, 200, response.content)
        self.assertIn("add", response.json()["tools"])

    def test_status_shows_the_connected_server(self) -> None:
        self.client.get("/tools")
        response = self.client.get("/status")
        self.assertEqual(response.status_code, 200, response.content)
        self.assertEqual(response.json()["servers"]["demo"]["state"], "connected")
