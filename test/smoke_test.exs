defmodule SmokeTest do
  use ExUnit.Case
  doctest McpFramer
end
