<doc id="oîly">
word
/doc>