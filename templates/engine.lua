-- The template engine: C text with Lua mixed in.
--
--   $ lua code          a line whose first non-blank character is '$'
--                       followed by a blank (or nothing) is Lua
--   ... ${expr} ...     any other line is text; ${expr} inserts the value
--                       of a Lua expression (a string or an integer)
--
-- Each template line becomes exactly one line of Lua, so Lua's own error
-- positions (chunk "@templates/x.c.in", line N) are template positions.

local E = {}

-- Translate one text line into a Lua statement that emits it.
local function text_line(line, path, lineno)
	local parts, pos = {}, 1
	while true do
		local s = line:find("${", pos, true)
		if not s then
			break
		end
		local bs, be = line:find("%b{}", s + 1)
		if bs ~= s + 1 then
			error(string.format("%s:%d: '${' without a matching '}'",
			                    path, lineno), 0)
		end
		parts[#parts + 1] = string.format("%q", line:sub(pos, s - 1))
		parts[#parts + 1] = "(" .. line:sub(s + 2, be - 1) .. ")"
		pos = be + 1
	end
	parts[#parts + 1] = string.format("%q", line:sub(pos))
	parts[#parts + 1] = '"\\n"'
	return "_o(" .. table.concat(parts, ", ") .. ")"
end

-- Lua source for a template, line for line.
function E.translate(text, path)
	local out, lineno = {}, 0
	if text:sub(-1) ~= "\n" then
		text = text .. "\n"
	end
	for line in text:gmatch("([^\n]*)\n") do
		lineno = lineno + 1
		local code = line:match("^%s*%$%s(.*)$")
		if not code and line:match("^%s*%$$") then
			code = ""
		end
		out[#out + 1] = code or text_line(line, path, lineno)
	end
	return table.concat(out, "\n")
end

-- Render the template at path with the names in vars visible to it
-- (besides the sandbox's).  Returns the text.  A template that cannot be
-- read is blamed on the caller's caller (the template line that included it).
function E.render(path, vars)
	local ok, text = pcall(mhagen.source, path)
	if not ok then
		error(text, 3)
	end
	local buf = {}
	local env = setmetatable({}, {__index = function(_, k)
		local v = vars[k]
		if v == nil then
			v = _ENV[k]
		end
		return v
	end})
	env._o = function(...)
		for i = 1, select("#", ...) do
			local v = select(i, ...)
			if type(v) == "number" and math.type(v) == "float" then
				error("interpolated a float; format it with hexf()", 2)
			elseif type(v) ~= "string" and type(v) ~= "number" then
				error("interpolated a " .. type(v) .. " value", 2)
			end
			buf[#buf + 1] = tostring(v)
		end
	end
	local fn = mhagen.compile(E.translate(text, mhagen.display(path)), path, env)
	fn()
	return table.concat(buf)
end

return E
